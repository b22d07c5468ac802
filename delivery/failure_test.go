package delivery

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/testkit"
)

func TestFailedCallNamesWhatFailedAndNeverCarriesThePeersBytes(t *testing.T) {
	ctx := context.Background()
	s := NewSender(Options{Policy: DefaultPolicy(), Timeout: 5 * time.Second})
	send := func(url string) Result {
		return send(ctx, s, url, NewSecret(), intake.NewEnvelope(&intake.Event{ID: "e"}), time.Now())
	}
	for name, greeting := range map[string][]byte{"nats": testkit.NATSGreeting, "mariadb": testkit.MariaDBGreeting} {
		addr := testkit.Banner(t, greeting)
		for url, want := range map[string]string{
			"http://" + addr + "/hooks":  "malformed HTTP answer",
			"https://" + addr + "/hooks": "TLS handshake failed",
		} {
			r := send(url)
			if r.Outcome != intake.DeliveryRetry || r.Err != want {
				t.Errorf("%s over %s: %+v, want %q", name, url[:strings.Index(url, ":")], r, want)
			}
			testkit.NoPeerBytes(t, name, r.Err, greeting)
		}
	}

	// A port nobody listens on, a peer that hangs up without a word, and a
	// certificate nobody vouches for.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	if r := send("http://" + closed + "/"); r.Err != "connection refused" {
		t.Errorf("closed port: %+v", r)
	}
	hangUp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hangUp.Close()
	go func() {
		c, err := hangUp.Accept()
		if err != nil {
			return
		}
		// The whole request is read first: closing over unread bytes
		// would reset the connection instead.
		if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			io.Copy(io.Discard, req.Body)
		}
		c.Close()
	}()
	if r := send("http://" + hangUp.Addr().String() + "/"); r.Err != "connection closed without an answer" {
		t.Errorf("a peer that hangs up: %+v", r)
	}
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer tlsSrv.Close()
	if r := send(tlsSrv.URL); r.Err != "TLS certificate not trusted" {
		t.Errorf("self-signed certificate: %+v", r)
	}
	if r := send("http://" + closed + "/"); strings.Contains(r.Err, closed) {
		t.Errorf("the error names the address: %q", r.Err)
	}
}

// A failure describe has no name for is recorded as "request failed"
// alone: the error's text quotes the consumer's URL, with the user and the
// query (a token) it may carry.
func TestFailedCallWithoutANameNeverCarriesTheConsumersURL(t *testing.T) {
	s := NewSender(Options{Policy: DefaultPolicy(), Timeout: 2 * time.Second})
	// Port 99999 fails in the dialer, for no reason connFailure names.
	const url = "http://intake-user:hunter2@127.0.0.1:99999/hooks?token=tok_0123456789"
	r := send(context.Background(), s, url, NewSecret(), intake.NewEnvelope(&intake.Event{ID: "e"}), time.Now())
	if r.Outcome != intake.DeliveryRetry || r.Err != "request failed" {
		t.Errorf("%+v, want a retry saying only \"request failed\"", r)
	}
	for _, part := range []string{"intake-user", "hunter2", "tok_0123456789", "127.0.0.1", "/hooks"} {
		if strings.Contains(r.Err, part) {
			t.Errorf("the recorded error %q carries the consumer url's %q", r.Err, part)
		}
	}
}
