package inboxcheck_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/inbox"
)

// Example_orderService is package inbox's Example (inbox/example_test.go,
// compiled there without a driver), run here on SQLite with its output
// checked.
func Example_orderService() {
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
	// Output:
	// 200 {"duplicate":false,"outcome":"handled"}
	// 200 {"duplicate":true,"outcome":"handled"}
	// ord_1 paid 2000
}

// post delivers body as intake does: signed with Standard Webhooks
// headers under the consumer's secret.
func post(url, secret, id string, body []byte) string {
	now := time.Now().Unix()
	sig, err := delivery.Sign(secret, id, now, body)
	if err != nil {
		log.Fatal(err)
	}
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

// Example_prune is package inbox's ExampleHandler_Prune, run here.
func Example_prune() {
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
	// Output:
	// 0 <nil>
	// inbox: prune keeps at least 24h0m0s (intake may redeliver an event that long), not 1h0m0s
}

// The examples package inbox documents are the ones run above, statement
// for statement: their bodies are compared as Go (post, which delivers,
// signs with intake's signer here and by the specification's steps there).
func TestTheInboxsDocumentedExamplesAreTheOnesRunHere(t *testing.T) {
	documented, run := funcBodies(t, "../../inbox/example_test.go"), funcBodies(t, "example_test.go")
	for doc, here := range map[string]string{"Example": "Example_orderService", "ExampleHandler_Prune": "Example_prune"} {
		switch d, ok := documented[doc]; {
		case !ok:
			t.Errorf("package inbox documents no %s", doc)
		case d != run[here]:
			t.Errorf("package inbox's %s is not the %s run here:\n%s\nwant\n%s", doc, here, d, run[here])
		}
	}
}

var blankLines = regexp.MustCompile(`\n\s*\n`)

// funcBodies are a file's functions' bodies, printed without comments.
func funcBodies(t *testing.T, name string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]string{}
	for _, decl := range f.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Body != nil {
			var b strings.Builder
			if err := printer.Fprint(&b, fset, fn.Body); err != nil {
				t.Fatal(err)
			}
			bodies[fn.Name.Name] = blankLines.ReplaceAllString(b.String(), "\n") // where a comment was
		}
	}
	return bodies
}
