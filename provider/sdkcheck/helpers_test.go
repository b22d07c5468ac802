package sdkcheck

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/provider"
	"github.com/intakehq/intake/provider/fixtures"
)

// endpointURL is where the deliveries are posted, for the providers that
// sign the URL.
const endpointURL = "https://hooks.example.com/webhooks/ik_sdkcheck"

// delivery is one request as intake stores it, and whether it should verify:
// true only when it is what the secret's holder sent, within the time the
// provider allows.
type delivery struct {
	name string
	r    *provider.Request
	want bool
}

// agree runs every delivery through the provider's SDK (sdk says whether
// it accepts it) and through intake's adapter for code, holding secrets,
// and fails unless both give each delivery's verdict.
func agree(t *testing.T, code string, secrets []string, cfg provider.Config, sdk func(*provider.Request) bool, ds []delivery) {
	t.Helper()
	verdicts := make([]verdict, len(ds))
	for i, d := range ds {
		verdicts[i] = verdict{OK: sdk(clone(d.r))}
	}
	judge(t, code, secrets, cfg, verdicts, ds)
}

// verdict is an SDK's judgement of one delivery, with its reason when it
// refuses (when the SDK gives one).
type verdict struct {
	OK  bool   `json:"ok"`
	Why string `json:"why"`
}

// judge fails unless the SDK's verdicts and intake's adapter for code,
// holding secrets, both give each delivery its expected verdict. A refusal
// by intake must be a refusal of the signature, not of the config.
func judge(t *testing.T, code string, secrets []string, cfg provider.Config, verdicts []verdict, ds []delivery) {
	t.Helper()
	a, ok := provider.Lookup(code)
	if !ok {
		t.Fatalf("intake has no adapter %q", code)
	}
	keys := make([][]byte, len(secrets))
	for i, s := range secrets {
		keys[i] = []byte(s)
	}
	for i, d := range ds {
		t.Run(d.name, func(t *testing.T) {
			if got := verdicts[i]; got.OK != d.want {
				t.Errorf("the SDK accepts it: %v %s, want %v", got.OK, got.Why, d.want)
			}
			err := a.Verify(clone(d.r), keys, cfg)
			if err != nil && !errors.Is(err, provider.ErrSignature) {
				t.Fatalf("intake refused it for another reason than its signature: %v", err)
			}
			if got := err == nil; got != d.want {
				t.Errorf("intake accepts it: %v (%v), want %v", got, err, d.want)
			}
		})
	}
}

// clone is a copy of r that a verifier may change without touching r.
func clone(r *provider.Request) *provider.Request {
	c := *r
	c.Header = r.Header.Clone()
	c.Body = bytes.Clone(r.Body)
	return &c
}

// httpRequest is r as an SDK's net/http handler receives it.
func httpRequest(t testing.TB, r *provider.Request) *http.Request {
	t.Helper()
	req, err := http.NewRequest(r.Method, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = r.Header.Clone()
	return req
}

// received makes a request of body and header, received at at.
func received(body []byte, header http.Header, at time.Time) *provider.Request {
	return &provider.Request{Method: http.MethodPost, URL: endpointURL, Header: header, Body: body, ReceivedAt: at}
}

// sample is intake's own signed sample of code (the one `intake send`
// posts), signed with secret at now, as received at now: for the SDKs that
// only verify, it is what they are asked to accept.
func sample(t testing.TB, code, secret string, now time.Time) *provider.Request {
	t.Helper()
	s, err := fixtures.Build(code, fixtures.Options{Secret: secret, URL: endpointURL, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return received(s.Body, s.Header, now)
}

// withBody is r with its body replaced.
func withBody(r *provider.Request, body []byte) *provider.Request {
	c := clone(r)
	c.Body = body
	return c
}

// withHeader is r with one header set to value ("" removes it).
func withHeader(r *provider.Request, name, value string) *provider.Request {
	c := clone(r)
	if value == "" {
		c.Header.Del(name)
	} else {
		c.Header.Set(name, value)
	}
	return c
}

// receivedAt is r received at another time.
func receivedAt(r *provider.Request, at time.Time) *provider.Request {
	c := clone(r)
	c.ReceivedAt = at
	return c
}

// oneByte is b with the byte at the middle changed to another printable one.
func oneByte(b []byte) []byte {
	c := bytes.Clone(b)
	i := len(c) / 2
	if c[i] == 'x' {
		c[i] = 'y'
	} else {
		c[i] = 'x'
	}
	return c
}

// flipHex changes one digit of a hex signature, keeping it hex.
func flipHex(sig string) string {
	i := len(sig) / 2
	repl := "0"
	if sig[i] == '0' {
		repl = "1"
	}
	return sig[:i] + repl + sig[i+1:]
}

// flipBase64 changes one character of a base64 signature, keeping it
// base64 of the same length.
func flipBase64(sig string) string {
	i := len(sig) / 3
	repl := "A"
	if sig[i] == 'A' {
		repl = "B"
	}
	return sig[:i] + repl + sig[i+1:]
}

// replaceOnce replaces the first old in s, failing when there is none, so
// a tampering that changed nothing cannot pass for one.
func replaceOnce(t testing.TB, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("%q not in %q", old, s)
	}
	return strings.Replace(s, old, new, 1)
}
