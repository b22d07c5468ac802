package inboxcheck

import (
	"bytes"
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/inbox"
)

// During a rotation intake signs under both secrets (space-separated
// signatures, each made by intake's own signer) and the application holds
// one or both: any pairing that shares a secret is taken, and none other.
func TestTheInboxTakesIntakesSignaturesUnderAnyHeldSecret(t *testing.T) {
	d := testDB{dialect: "sqlite", driver: "sqlite", dsn: sqliteDSN(filepath.Join(t.TempDir(), "app.db"))}
	d.db = d.reopen(t)
	old, next, stranger := delivery.NewSecret(), delivery.NewSecret(), delivery.NewSecret()
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"evt-1","type":"stripe.invoice.paid"}`)
	sign := func(secrets ...string) string {
		var sigs []string
		for _, s := range secrets {
			sig, err := delivery.Sign(s, "evt-1", now.Unix(), body)
			if err != nil {
				t.Fatal(err)
			}
			sigs = append(sigs, sig)
		}
		return strings.Join(sigs, " ")
	}
	for i, c := range []struct {
		name    string
		held    []string
		signed  string
		success bool
	}{
		{"old signature, old secret", []string{old}, sign(old), true},
		{"both signatures, old secret", []string{old}, sign(next, old), true},
		{"both signatures, new secret", []string{next}, sign(next, old), true},
		{"old signature, both secrets", []string{next, old}, sign(old), true},
		{"another's signature", []string{next, old}, sign(stranger), false},
		{"a v1a signature first", []string{old}, "v1a,AAAA " + sign(old), true},
		{"a signature that is not base64", []string{old}, "v1,***", false},
	} {
		calls := 0
		h, err := inbox.New(d.db, func(context.Context, *sql.Tx, inbox.Event) (inbox.Outcome, error) {
			calls++
			return inbox.Handled, nil
		}, inbox.Options{Secrets: c.held, Dialect: "sqlite", Table: "inbox_" + strconv.Itoa(i), Now: func() time.Time { return now }, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodPost, "/events", bytes.NewReader(body))
		r.Header.Set("webhook-id", "evt-1")
		r.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		r.Header.Set("webhook-signature", c.signed)
		a := serve(h, r)
		switch {
		case c.success && (a.status != http.StatusOK || calls != 1):
			t.Errorf("%s: answered %d %s, %d calls; want taken", c.name, a.status, a.raw, calls)
		case !c.success && (a.status != http.StatusUnauthorized || a.code() != "signature" || calls != 0):
			t.Errorf("%s: answered %d %s, %d calls; want 401 signature", c.name, a.status, a.raw, calls)
		}
	}
}

// An id intake's signer signs but the inbox could not record (too long, a
// space, not ASCII) is refused before the function is called.
func TestTheInboxRefusesAnIDThatCannotBeRecorded(t *testing.T) {
	d := testDB{dialect: "sqlite", driver: "sqlite", dsn: sqliteDSN(filepath.Join(t.TempDir(), "app.db"))}
	d.db = d.reopen(t)
	l := newLedger(t, d)
	now := time.Unix(1_800_000_000, 0)
	h, err := inbox.New(d.db, l.apply, inbox.Options{Secrets: []string{testSecret}, Dialect: "sqlite", Now: func() time.Time { return now }, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{strings.Repeat("e", 256), "evt 1", "évt-1"} {
		body := []byte(`{"id":"` + id + `","type":"stripe.invoice.paid"}`)
		if a := serve(h, signedRequest(t, testSecret, id, body, now)); a.status != http.StatusUnauthorized {
			t.Errorf("id %.20q…: answered %d %s, want 401", id, a.status, a.raw)
		}
	}
	if l.calls.Load() != 0 || d.records(t) != 0 {
		t.Fatalf("an id that cannot be recorded was applied: %d calls, %d records", l.calls.Load(), d.records(t))
	}
	long := strings.Repeat("e", 255) // the longest the inbox records
	if a := serve(h, signedRequest(t, testSecret, long, []byte(`{"id":"`+long+`","type":"stripe.invoice.paid"}`), now)); a.status != http.StatusOK {
		t.Fatalf("an id of 255 characters: answered %d %s", a.status, a.raw)
	}
}
