package provider

import (
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// BigCommerce sends the hook's custom headers instead of a signature; the
// payload is the example of its webhooks overview
// (https://developer.bigcommerce.com/docs/integrations/webhooks).
const (
	bcToken = "Bearer 9c1e6f0a-hook-secret"
	bcBody  = `{"created_at":1561479335,"store_id":"1025646","producer":"stores/{store_hash}","scope":"store/order/created",` +
		`"hash":"dd70c0976e06b67aaf671e73f49dcb79230ebf9d","data":{"type":"order","id":250}}`
)

func TestBigCommerceAcceptsTheHooksHeader(t *testing.T) {
	wantVerified(t, adapter(t, "bigcommerce").Verify(post(bcBody, "Authorization", bcToken), secrets("Bearer old", bcToken), nil))
	cfg := Config{"auth_header": "X-Hook-Token"}
	wantVerified(t, adapter(t, "bigcommerce").Verify(post(bcBody, "x-hook-token", "t0ken"), secrets("t0ken"), cfg))
}

func TestBigCommerceRejects(t *testing.T) {
	wantAllRejected(t, "bigcommerce", nil, []rejectCase{
		{"wrong value", post(bcBody, "Authorization", "Bearer 9c1e6f0a-hook-secreT"), secrets(bcToken)},
		{"no secrets", post(bcBody, "Authorization", bcToken), nil},
		{"empty secret", post(bcBody, "Authorization", ""), secrets("")},
		{"missing header", post(bcBody), secrets(bcToken)},
	})
	// The value in another header than the configured one does not count.
	wantRejected(t, adapter(t, "bigcommerce").Verify(post(bcBody, "Authorization", "t0ken"), secrets("t0ken"), Config{"auth_header": "X-Hook-Token"}))
}

func TestBigCommerceConfigNamesAHeader(t *testing.T) {
	a := adapter(t, "bigcommerce")
	for _, bad := range []Config{{"auth_header": "X Bad"}, {"auth_header": "a:b"}, {"auth_header": 7}} {
		if a.ValidateConfig(bad) == nil {
			t.Errorf("config %v accepted", bad)
		}
	}
	if got := a.(CredentialHeaderer).CredentialHeaders(Config{"auth_header": "X-Hook-Token"}); !equalStrings(got, []string{"X-Hook-Token"}) {
		t.Errorf("CredentialHeaders = %v", got)
	}
}

func TestBigCommerceInterpretsThePayload(t *testing.T) {
	ev := oneEvent(t, adapter(t, "bigcommerce"), post(bcBody), nil)
	if ev.ProviderEventID != "stores/{store_hash}:store/order/created:dd70c0976e06b67aaf671e73f49dcb79230ebf9d:1561479335" ||
		ev.Type != "bigcommerce.store.order.created" || ev.Kind != intake.KindEvent {
		t.Fatalf("id %q type %q", ev.ProviderEventID, ev.Type)
	}
	if !equalStrings(ev.ObjectIDs, []string{"250"}) || !ev.OccurredAt.Equal(time.Unix(1561479335, 0)) || string(ev.Data) != bcBody {
		t.Errorf("ObjectIDs %v OccurredAt %v Data %s", ev.ObjectIDs, ev.OccurredAt, ev.Data)
	}
}

func TestBigCommerceRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"hash":"x"}`, "[]"} {
		_, err := adapter(t, "bigcommerce").Interpret(post(body), nil)
		wantPermanent(t, err)
	}
}
