package ingress_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/ingress"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/provider"
)

// Xero proves an endpoint with "intent to receive" requests, one signed and
// one not, and activates the webhook only if the first is answered 200 and
// the second 401: the answer depends on verification, and both are stored.
func TestIngressAnswersXeroIntentToReceive401UnlessSigned(t *testing.T) {
	sealer := testkit.Sealer(t)
	e := setup(t, ingress.Config{Sealer: sealer}, nil)
	const webhookKey = "OSd0eLlVIY9ZhViEqlDUh4+6n6M+Lo+eDaEJheJ6OCCgWwIz2D3JIAU6jPMipHRbgKTLz2uJ+xiACXGDBLrgdA=="
	conn := intake.Connection{ID: intake.NewID(), OrgID: e.ep.OrgID, Provider: "xero", Name: "xero", CreatedAt: e.clock.Now()}
	var err error
	if conn.SealedSecrets, err = sealer.SealConnectionSecrets(conn, []string{webhookKey}); err != nil {
		t.Fatal(err)
	}
	tok, _ := e.connected(t, conn)
	const body = `{"events":[],"firstEventSequence":0,"lastEventSequence":0,"entropy":"FMLHZNKCVK"}`
	signed := func(k string) http.Header {
		mac := hmac.New(sha256.New, []byte(k))
		mac.Write([]byte(body))
		return http.Header{"Content-Type": {"application/json"}, "X-Xero-Signature": {base64.StdEncoding.EncodeToString(mac.Sum(nil))}}
	}
	if w := e.post("/webhooks/"+tok, strings.NewReader(body), signed(webhookKey)); w.Code != http.StatusOK || w.Body.Len() != 0 {
		t.Fatalf("signed intent to receive: %d %q, want 200 with no body", w.Code, w.Body)
	}
	if w := e.post("/webhooks/"+tok, strings.NewReader(body), signed("not the key")); w.Code != http.StatusUnauthorized {
		t.Fatalf("forged intent to receive: %d %q, want 401", w.Code, w.Body)
	}
	if n := len(e.stored(t)); n != 2 {
		t.Fatalf("%d messages recorded, want both kept", n)
	}
}

// handshakeAdapter answers every request as a handshake and keeps the
// org each was budgeted to: what it fetches to answer (a certificate, a
// subscription URL) is charged to that org.
type handshakeAdapter struct {
	mu   sync.Mutex
	orgs []string
}

func (*handshakeAdapter) Name() string                         { return "ingress-test-handshake" }
func (*handshakeAdapter) ValidateConfig(provider.Config) error { return nil }
func (*handshakeAdapter) Verify(*provider.Request, [][]byte, provider.Config) error {
	return nil
}
func (*handshakeAdapter) Interpret(*provider.Request, provider.Config) (provider.Interpretation, error) {
	return provider.Interpretation{}, provider.Permanent("a handshake only")
}
func (a *handshakeAdapter) Challenge(r *provider.Request, _ [][]byte, _ provider.Config) (provider.Challenge, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.orgs = append(a.orgs, r.Org)
	return provider.Challenge{Status: http.StatusOK, ContentType: "text/plain", Body: []byte("ok")}, true
}

var handshakes = &handshakeAdapter{}

func init() { provider.Register(handshakes) }

// TestAHandshakeIsAnsweredOnTheBudgetOfItsEndpointsOrg: the request an
// adapter answers inline carries the org of the endpoint it came to, so
// that what answering costs (an SNS certificate fetched, a subscription
// confirmed) is charged to that org's budget, not shared by every org.
func TestAHandshakeIsAnsweredOnTheBudgetOfItsEndpointsOrg(t *testing.T) {
	e := setup(t, ingress.Config{}, nil)
	conn := intake.Connection{ID: intake.NewID(), OrgID: e.ep.OrgID, Provider: handshakes.Name(), Name: "handshake", CreatedAt: e.clock.Now()}
	tok, ep := e.connected(t, conn)
	if w := e.post("/webhooks/"+tok, strings.NewReader(`{}`), http.Header{"Content-Type": {"application/json"}}); w.Code != http.StatusOK || w.Body.String() != "ok" {
		t.Fatalf("handshake answered %d %q, want the adapter's 200 ok", w.Code, w.Body)
	}
	handshakes.mu.Lock()
	defer handshakes.mu.Unlock()
	if len(handshakes.orgs) != 1 || handshakes.orgs[0] != ep.OrgID {
		t.Fatalf("the handshake was answered for orgs %q, want the endpoint's org %s", handshakes.orgs, ep.OrgID)
	}
}
