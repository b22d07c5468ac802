package inbox_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/intakehq/intake/inbox"
)

// An order service marks orders paid from Stripe's payment events, which
// intake delivers. The payment is added to the order in the service's own
// transaction, with the event's id: intake delivering the event twice
// (its first answer was lost) pays the order once.
//
// The application brings its database driver; this one is SQLite's
// modernc.org/sqlite (import _ "modernc.org/sqlite"). The inbox imports no
// driver, so this example is compiled here and run, its output checked, by
// intake's internal/inboxcheck, where the driver is:
//
//	200 {"duplicate":false,"outcome":"handled"}
//	200 {"duplicate":true,"outcome":"handled"}
//	ord_1 paid 2000
func Example() {
	dir, err := os.MkdirTemp("", "orders")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "orders.db")+
		"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE orders (id TEXT PRIMARY KEY, paid_cents INTEGER NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO orders (id, paid_cents) VALUES ('ord_1', 0)`); err != nil {
		log.Fatal(err)
	}

	pay := func(ctx context.Context, tx *sql.Tx, e inbox.Event) (inbox.Outcome, error) {
		if e.Type != "stripe.payment_intent.succeeded" || e.Replay {
			return inbox.Ignored, nil // not a payment, or a payment replayed: paid already
		}
		var stripe struct { // e.Data is Stripe's event
			Data struct {
				Object struct {
					Amount   int64             `json:"amount"`
					Metadata map[string]string `json:"metadata"`
				} `json:"object"`
			} `json:"data"`
		}
		if err := json.Unmarshal(e.Data, &stripe); err != nil {
			return 0, err
		}
		pi := stripe.Data.Object
		_, err := tx.ExecContext(ctx, `UPDATE orders SET paid_cents = paid_cents + ? WHERE id = ?`, pi.Amount, pi.Metadata["order_id"])
		return inbox.Handled, err
	}
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // the consumer's signing secret, shown once when it was added
	h, err := inbox.New(db, pay, inbox.Options{Secrets: []string{secret}, Dialect: "sqlite"})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h) // mux.Handle("POST /intake/events", h)
	defer srv.Close()

	event := []byte(`{"id":"evt_01","type":"stripe.payment_intent.succeeded","kind":"event","provider":"stripe",
		"replay":false,"replay_of":null,"data":{"id":"evt_3Q","object":"event","type":"payment_intent.succeeded",
		"data":{"object":{"id":"pi_3Q","amount":2000,"metadata":{"order_id":"ord_1"}}}}}`)
	for range 2 {
		fmt.Println(post(srv.URL, secret, "evt_01", event))
	}
	var paid int
	if err := db.QueryRow(`SELECT paid_cents FROM orders WHERE id = 'ord_1'`).Scan(&paid); err != nil {
		log.Fatal(err)
	}
	fmt.Println("ord_1 paid", paid)
}

// post delivers body as intake does: signed with Standard Webhooks
// headers under the consumer's secret.
func post(url, secret, id string, body []byte) string {
	now := time.Now().Unix()
	sig := sign(secret, id, now, body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now, 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(b))
}

// sign is Standard Webhooks' signature, as intake makes it: "v1," and the
// base64 HMAC-SHA256 of "{id}.{timestamp}.{body}" under the secret's key.
func sign(secret, id string, timestamp int64, body []byte) string {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		log.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, timestamp)
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// The inbox keeps each event id it recorded until the application prunes
// it; a daily Prune that keeps 30 days (intake's default retention of
// events) never lets a redelivery through. Run by internal/inboxcheck, it
// prints:
//
//	0 <nil>
//	inbox: prune keeps at least 24h0m0s (intake may redeliver an event that long), not 1h0m0s
func ExampleHandler_Prune() {
	db, err := sql.Open("sqlite", "file:prune-example?mode=memory&cache=shared")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	h, err := inbox.New(db, func(context.Context, *sql.Tx, inbox.Event) (inbox.Outcome, error) { return inbox.Handled, nil },
		inbox.Options{Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, Dialect: "sqlite"})
	if err != nil {
		log.Fatal(err)
	}
	deleted, err := h.Prune(context.Background(), 30*24*time.Hour)
	fmt.Println(deleted, err)
	_, err = h.Prune(context.Background(), time.Hour)
	fmt.Println(err)
}
