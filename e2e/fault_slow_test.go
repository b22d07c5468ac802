package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Short server timeouts keep the slow-client tests within seconds; the
// production defaults are 10s for headers and 60s for a whole request.
const (
	headerTimeout = time.Second
	readTimeout   = 2 * time.Second
)

// startWithShortTimeouts starts intake with the slow-client timeouts above,
// failing clearly when serve cannot be given them.
func startWithShortTimeouts(t *testing.T) *server {
	t.Helper()
	help, _ := exec.Command(binary, "serve", "--help").CombinedOutput()
	for _, flag := range []string{"--read-header-timeout", "--read-timeout"} {
		if !strings.Contains(string(help), flag) {
			t.Fatalf("intake serve has no %s flag: the slow-client tests need serve's read timeouts configurable", flag)
		}
	}
	return start(t, t.TempDir(), "--read-header-timeout", headerTimeout.String(), "--read-timeout", readTimeout.String())
}

// trickle writes b to conn one byte every interval, stopping early when the
// server has closed the connection (closed is then closed). It reports
// whether every byte was written.
func trickle(conn net.Conn, b []byte, interval time.Duration, closed <-chan struct{}) bool {
	for i := range b {
		select {
		case <-closed:
			return false
		case <-time.After(interval):
		}
		if _, err := conn.Write(b[i : i+1]); err != nil {
			return false
		}
	}
	return true
}

// cutOff is what a slow client saw: how long until the server closed the
// connection, whether it had sent everything by then, and the status line
// of an answer if there was one.
type cutOff struct {
	after    time.Duration
	finished bool
	status   string
	err      error
}

// slowClient dials addr, sends head at once and then rest one byte every
// interval, and reads whatever the server answers until it closes the
// connection. guard bounds the whole exchange.
func slowClient(addr string, head, rest []byte, interval, guard time.Duration) cutOff {
	began := time.Now()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return cutOff{err: err}
	}
	defer conn.Close()
	conn.SetDeadline(began.Add(guard))
	closed := make(chan struct{})
	var status string
	var readErr error
	go func() {
		defer close(closed)
		r := bufio.NewReader(conn)
		line, err := r.ReadString('\n')
		status = strings.TrimSpace(line)
		if err == nil {
			_, err = io.Copy(io.Discard, r)
		}
		if err != io.EOF {
			readErr = err
		}
	}()
	if _, err := conn.Write(head); err != nil {
		return cutOff{err: err}
	}
	finished := trickle(conn, rest, interval, closed)
	<-closed
	c := cutOff{after: time.Since(began), finished: finished, status: status}
	if ne, ok := readErr.(net.Error); ok && ne.Timeout() {
		c.err = fmt.Errorf("not cut off within %v", guard)
	}
	return c
}

// webhooksMeanwhile posts webhooks one after another until stop closes, and
// reports how many were answered 200 and the first other outcome.
func webhooksMeanwhile(url, prefix string, stop <-chan struct{}) (ok int, failure error) {
	client := &http.Client{Timeout: 30 * time.Second} // a hang guard
	for i := 0; ; i++ {
		select {
		case <-stop:
			return ok, nil
		default:
		}
		resp, err := client.Do(githubDelivery(url, fmt.Sprintf("%s-%d", prefix, i)))
		if err != nil {
			return ok, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return ok, fmt.Errorf("webhook answered %d", resp.StatusCode)
		}
		ok++
	}
}

// TestSlowlorisHeadersAreCutOffWhileWebhooksFlow opens connections that
// send request headers a byte at a time, too slowly to finish within the
// header timeout. The server closes each of them, and meanwhile webhooks on
// other connections are answered and stored.
func TestSlowlorisHeadersAreCutOffWhileWebhooksFlow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	s := startWithShortTimeouts(t)
	path := setupGitHub(t, s)
	addr := strings.TrimPrefix(s.url, "http://")
	// Sent whole, this header would take 30s at a byte every 100ms.
	header := []byte("POST " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\n" +
		"X-GitHub-Event: issues\r\nX-GitHub-Delivery: slowloris\r\nX-Padding: " + strings.Repeat("x", 150) + "\r\n\r\n")

	const slow = 64
	results := make(chan cutOff, slow)
	for range slow {
		go func() { results <- slowClient(addr, nil, header, 100*time.Millisecond, 20*time.Second) }()
	}
	stop := make(chan struct{})
	type meanwhile struct {
		ok  int
		err error
	}
	flowed := make(chan meanwhile, 1)
	go func() {
		ok, err := webhooksMeanwhile(s.url+path, "meanwhile", stop)
		flowed <- meanwhile{ok, err}
	}()

	var longest time.Duration
	for range slow {
		r := <-results // each bounded by slowClient's guard
		switch {
		case r.err != nil:
			t.Errorf("slow client: %v", r.err)
		case r.finished:
			t.Errorf("a slow client sent its whole header in %v without being cut off", r.after)
		case r.after < headerTimeout-100*time.Millisecond:
			t.Errorf("a slow client was cut off after %v, before the header timeout %v", r.after, headerTimeout)
		case strings.HasPrefix(r.status, "HTTP/1.1 2"):
			t.Errorf("a slow client got %q for a request it never finished", r.status)
		}
		longest = max(longest, r.after)
	}
	close(stop)
	m := <-flowed
	if m.err != nil {
		t.Fatalf("a webhook during the slowloris: %v (after %d answered)", m.err, m.ok)
	}
	if m.ok == 0 {
		t.Fatal("no webhook was answered while the slow clients were connected")
	}
	if msgs := s.messages(t); len(msgs) != m.ok {
		t.Errorf("%d messages stored, want the %d webhooks answered", len(msgs), m.ok)
	}
	t.Logf("%d slow clients cut off within %v; %d webhooks answered meanwhile", slow, longest, m.ok)
}

// TestTricklingBodyIsCutOffAndNothingStored sends complete headers of a
// signed webhook and then its body a byte at a time, too slowly to finish
// within the read timeout. The server gives up on each request without
// storing anything, while webhooks on other connections are answered.
func TestTricklingBodyIsCutOffAndNothingStored(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	s := startWithShortTimeouts(t)
	path := setupGitHub(t, s)
	addr := strings.TrimPrefix(s.url, "http://")
	req := githubDelivery(s.url+path, "trickled")
	body, _ := io.ReadAll(req.Body)
	var head strings.Builder
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", path, addr, len(body))
	for k, v := range req.Header {
		fmt.Fprintf(&head, "%s: %s\r\n", k, v[0])
	}
	head.WriteString("\r\n")

	const slow = 16
	results := make(chan cutOff, slow)
	for range slow {
		// Sent whole, the body would take about 8s at a byte every 100ms.
		go func() { results <- slowClient(addr, []byte(head.String()), body, 100*time.Millisecond, 20*time.Second) }()
	}
	stop := make(chan struct{})
	type meanwhile struct {
		ok  int
		err error
	}
	flowed := make(chan meanwhile, 1)
	go func() {
		ok, err := webhooksMeanwhile(s.url+path, "meanwhile", stop)
		flowed <- meanwhile{ok, err}
	}()

	var longest time.Duration
	var status string
	for range slow {
		r := <-results
		switch {
		case r.err != nil:
			t.Errorf("slow client: %v", r.err)
		case r.finished:
			t.Errorf("a slow client sent its whole body in %v without being cut off", r.after)
		case r.after < readTimeout-100*time.Millisecond:
			t.Errorf("a slow client was cut off after %v, before the read timeout %v", r.after, readTimeout)
		case strings.HasPrefix(r.status, "HTTP/1.1 2"):
			t.Errorf("an unfinished body was acknowledged: %q", r.status)
		}
		status = r.status
		longest = max(longest, r.after)
	}
	close(stop)
	m := <-flowed
	if m.err != nil {
		t.Fatalf("a webhook during the trickle: %v (after %d answered)", m.err, m.ok)
	}
	if m.ok == 0 {
		t.Fatal("no webhook was answered while the bodies trickled in")
	}
	var msgs []message
	eventually(t, 30*time.Second, "every stored message settled", func() bool {
		msgs = s.messages(t)
		for _, msg := range msgs {
			if !settled(msg.State) {
				return false
			}
		}
		return true
	})
	for _, msg := range msgs {
		if msg.ProviderEventID == "trickled" {
			t.Fatalf("a trickled body was stored: message %s", msg.ID)
		}
	}
	if len(msgs) != m.ok {
		t.Errorf("%d messages stored, want the %d webhooks answered", len(msgs), m.ok)
	}
	// Each trickle reached ingress, which gave up reading its body.
	if got := value(s.scrape(t), "intake_ingress_requests_total", "result", "bad_request"); got != slow {
		t.Errorf("ingress counted %v incomplete bodies, want %d", got, slow)
	}
	t.Logf("%d trickling bodies cut off within %v (%q); %d webhooks answered meanwhile", slow, longest, status, m.ok)
}
