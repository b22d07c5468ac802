package ingress_test

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/ingress"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/internal/token"
)

// Xero proves an endpoint with "intent to receive" requests, one signed and
// one not, and activates the webhook only if the first is answered 200 and
// the second 401: the answer depends on verification, and both are stored.
func TestIngressAnswersXeroIntentToReceive401UnlessSigned(t *testing.T) {
	key := make([]byte, seal.KeySize)
	rand.Read(key)
	sealer, err := seal.New(key)
	if err != nil {
		t.Fatal(err)
	}
	e := setup(t, ingress.Config{Sealer: sealer}, nil)
	ctx := context.Background()
	const webhookKey = "OSd0eLlVIY9ZhViEqlDUh4+6n6M+Lo+eDaEJheJ6OCCgWwIz2D3JIAU6jPMipHRbgKTLz2uJ+xiACXGDBLrgdA=="
	conn := intake.Connection{ID: intake.NewID(), OrgID: e.ep.OrgID, Provider: "xero", Name: "xero", CreatedAt: e.clock.Now()}
	if conn.SealedSecrets, err = sealer.SealConnectionSecrets(conn, []string{webhookKey}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.CreateConnection(ctx, conn); err != nil {
		t.Fatal(err)
	}
	tok := token.New("")
	ep := intake.Endpoint{ID: intake.NewID(), OrgID: e.ep.OrgID, ConnectionID: conn.ID, TokenHash: token.Hash(tok),
		Enabled: true, MaxBodyBytes: 1024, CreatedAt: e.clock.Now()}
	if err := e.store.CreateEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
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
