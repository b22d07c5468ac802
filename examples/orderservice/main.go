// Command orderservice is a small application built on package inbox: it
// keeps orders in its own SQLite database and marks them paid from
// Stripe's payment events, which intake delivers to /intake/events. Each
// payment is applied exactly once, however often intake delivers it; an
// operator's replay of a payment already applied is noted in the order's
// history and not charged again.
//
//	orderservice --addr 127.0.0.1:8090 --db orders.db --secret whsec_…
//
// POST /orders {"id","total_cents"} opens an order; GET /orders/{id} shows
// it with its history.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	_ "modernc.org/sqlite"

	"github.com/intakehq/intake/inbox"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "address to listen on")
	path := flag.String("db", "orders.db", "the SQLite database file")
	secrets := flag.String("secret", os.Getenv("ORDERS_INTAKE_SECRETS"), "the consumer's signing secrets, comma-separated (env ORDERS_INTAKE_SECRETS)")
	flag.Parse()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(*addr, *path, strings.Split(*secrets, ","), log); err != nil {
		log.Error("orderservice", "error", err)
		os.Exit(1)
	}
}

func run(addr, path string, secrets []string, log *slog.Logger) error {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range schema {
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("schema: %w", err)
		}
	}
	events, err := inbox.New(db, applyPayment, inbox.Options{Secrets: secrets, Dialect: "sqlite", Logger: log})
	if err != nil {
		return err
	}
	o := &orders{db: db}
	mux := http.NewServeMux()
	mux.Handle("POST /intake/events", events)
	mux.HandleFunc("POST /orders", o.open)
	mux.HandleFunc("GET /orders/{id}", o.show)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go pruneDaily(ctx, events, log)

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info("orderservice listening", "addr", ln.Addr().String())
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

var schema = []string{
	`CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, total_cents INTEGER NOT NULL, paid_cents INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL DEFAULT 'open')`,
	`CREATE TABLE IF NOT EXISTS order_history (order_id TEXT NOT NULL, event_id TEXT NOT NULL, replay_of TEXT NOT NULL, note TEXT NOT NULL)`,
}

// applyPayment adds a Stripe payment to its order, in the inbox's
// transaction. It is called once per event id; a replay (a new id) of a
// payment this service already applied is noted, not charged.
func applyPayment(ctx context.Context, tx *sql.Tx, e inbox.Event) (inbox.Outcome, error) {
	if e.Type != "stripe.payment_intent.succeeded" {
		return inbox.Ignored, nil
	}
	var stripe struct { // intake's data is Stripe's event
		Data struct {
			Object struct {
				Amount   int64             `json:"amount"`
				Metadata map[string]string `json:"metadata"`
			} `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(e.Data, &stripe); err != nil {
		return 0, fmt.Errorf("payment %s: %w", e.ID, err)
	}
	order, amount := stripe.Data.Object.Metadata["order_id"], stripe.Data.Object.Amount
	if e.Replay && e.ReplayOf != "" {
		var applied int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM order_history WHERE event_id = ?`, e.ReplayOf).Scan(&applied); err != nil {
			return 0, err
		}
		if applied > 0 {
			_, err := tx.ExecContext(ctx, `INSERT INTO order_history (order_id, event_id, replay_of, note) VALUES (?, ?, ?, ?)`,
				order, e.ID, e.ReplayOf, "replayed payment, already applied: not charged again")
			return inbox.Ignored, err
		}
	}
	res, err := tx.ExecContext(ctx, `UPDATE orders SET paid_cents = paid_cents + ?,
		status = CASE WHEN paid_cents + ? >= total_cents THEN 'paid' ELSE 'part_paid' END WHERE id = ?`, amount, amount, order)
	if err != nil {
		return 0, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return inbox.Ignored, err // not one of our orders
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO order_history (order_id, event_id, replay_of, note) VALUES (?, ?, ?, ?)`,
		order, e.ID, e.ReplayOf, fmt.Sprintf("paid %d", amount))
	return inbox.Handled, err
}

// pruneDaily forgets event ids older than 30 days, intake's default
// retention of events: no redelivery can come later.
func pruneDaily(ctx context.Context, h *inbox.Handler, log *slog.Logger) {
	t := time.NewTicker(24 * time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := h.Prune(ctx, 30*24*time.Hour); err != nil {
				log.Error("prune the inbox", "error", err)
			} else {
				log.Info("pruned the inbox", "deleted", n)
			}
		}
	}
}

// orders serves the service's own API.
type orders struct{ db *sql.DB }

type order struct {
	ID         string  `json:"id"`
	TotalCents int64   `json:"total_cents"`
	PaidCents  int64   `json:"paid_cents"`
	Status     string  `json:"status"`
	History    []entry `json:"history"`
}

type entry struct {
	EventID  string `json:"event_id"`
	ReplayOf string `json:"replay_of,omitempty"`
	Note     string `json:"note"`
}

func (o *orders) open(w http.ResponseWriter, r *http.Request) {
	var in order
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.ID == "" || in.TotalCents <= 0 {
		http.Error(w, `{"error":"an order needs an id and a positive total_cents"}`, http.StatusBadRequest)
		return
	}
	if _, err := o.db.ExecContext(r.Context(), `INSERT INTO orders (id, total_cents) VALUES (?, ?)`, in.ID, in.TotalCents); err != nil {
		http.Error(w, `{"error":"the order could not be opened"}`, http.StatusConflict)
		return
	}
	w.WriteHeader(http.StatusCreated)
}

func (o *orders) show(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	out := order{ID: r.PathValue("id"), History: []entry{}}
	err := o.db.QueryRowContext(ctx, `SELECT total_cents, paid_cents, status FROM orders WHERE id = ?`, out.ID).
		Scan(&out.TotalCents, &out.PaidCents, &out.Status)
	if errors.Is(err, sql.ErrNoRows) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, `{"error":"unavailable"}`, http.StatusServiceUnavailable)
		return
	}
	rows, err := o.db.QueryContext(ctx, `SELECT event_id, replay_of, note FROM order_history WHERE order_id = ? ORDER BY rowid`, out.ID)
	if err != nil {
		http.Error(w, `{"error":"unavailable"}`, http.StatusServiceUnavailable)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var e entry
		if err := rows.Scan(&e.EventID, &e.ReplayOf, &e.Note); err != nil {
			http.Error(w, `{"error":"unavailable"}`, http.StatusServiceUnavailable)
			return
		}
		out.History = append(out.History, e)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}
