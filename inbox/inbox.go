// Package inbox receives intake's events exactly once: an http.Handler
// that verifies each delivery's Standard Webhooks signature, decodes the
// envelope, and calls the application's function inside the application's
// own database transaction, in which it also records the event's id. The
// commit makes the effect and the record one, so a delivery intake repeats
// (a lost answer, a timeout, a crash after the commit) is answered 2xx
// without calling the function again.
//
// It works on PostgreSQL, MySQL/MariaDB and SQLite through database/sql,
// creates its own table, and imports nothing but the standard library: the
// application brings its driver.
package inbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// Outcome is what the application's function made of an event, as intake
// records it for the delivery.
type Outcome int

const (
	// Handled: the event was applied (the zero Outcome).
	Handled Outcome = iota
	// Ignored: the application chose not to act; intake records the
	// delivery as ignored. The id is recorded all the same, and whatever
	// the function wrote in the transaction is committed.
	Ignored
)

func (o Outcome) String() string {
	switch o {
	case Handled:
		return "handled"
	case Ignored:
		return "ignored"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Event is the envelope intake delivers, as the application's function
// receives it.
type Event struct {
	ID              string // the event id, the one recorded: intake's webhook-id
	Type            string // "stripe.payment_intent.succeeded"
	Kind            string // "event", "change_notice", "link_unfurl"
	OrgID           string
	ConnectionID    string
	Provider        string
	ProviderEventID string
	MessageID       string
	// Replay is true for an event an operator replayed: it has an id of its
	// own, so it reaches the function even when the original did;
	// ReplayOf is the original event's id (empty when the original message
	// produced no event for it). The application chooses whether to act
	// again.
	Replay        bool
	ReplayOf      string
	OccurredAt    time.Time
	ReceivedAt    time.Time
	Subject       *Subject
	Data          json.RawMessage // the provider's payload
	DataTruncated bool            // Data was trimmed; BodyURL serves the whole raw body for 5 minutes
	BodyURL       string
}

// Subject names the application's record an event is about, when intake
// knows it (a subject link).
type Subject struct {
	App      string `json:"app"`
	RecordID string `json:"record_id"`
}

// HandlerFunc applies one event. It must do its work through tx only: the
// inbox commits tx with the event's id when the function returns a nil
// error, and rolls it back (answering 5xx, so intake retries) otherwise.
type HandlerFunc func(ctx context.Context, tx *sql.Tx, e Event) (Outcome, error)

// Options configure a Handler.
type Options struct {
	// Secrets are the consumer's signing secrets ("whsec_…"): a delivery
	// signed under any of them is taken, so a rotation keeps the old one
	// here until its overlap ends. At least one is required.
	Secrets []string
	// Dialect is the database's: "postgres", "mysql" (MariaDB too) or
	// "sqlite".
	Dialect string
	// Table is the inbox table's name (default "inbox_events"), created
	// if missing: lower-case letters, digits and underscores.
	Table string
	// Tolerance is how far a delivery's webhook-timestamp may be from now,
	// either way (default 5 minutes); intake signs each attempt afresh.
	Tolerance time.Duration
	// MaxBodyBytes bounds a delivery's body (default 1 MiB); intake trims
	// an event's data to 64 KiB.
	MaxBodyBytes int64
	// Logger receives the function's and the database's errors, with the
	// event id, never a body (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Handler is the http.Handler an application mounts where intake delivers
// its events.
type Handler struct {
	db        *sql.DB
	fn        HandlerFunc
	keys      [][]byte
	sql       statements
	tolerance time.Duration
	maxBody   int64
	log       *slog.Logger
	now       func() time.Time
}

var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,47}$`)

// New returns a Handler that applies events with fn in transactions on db,
// after creating its table there if it is missing.
func New(db *sql.DB, fn HandlerFunc, opts Options) (*Handler, error) {
	if db == nil || fn == nil {
		return nil, errors.New("inbox: a database and a function are required")
	}
	if opts.Table == "" {
		opts.Table = "inbox_events"
	}
	if !tableName.MatchString(opts.Table) {
		return nil, fmt.Errorf("inbox: table name %q: use lower-case letters, digits and underscores", opts.Table)
	}
	st, err := dialect(opts.Dialect, opts.Table)
	if err != nil {
		return nil, err
	}
	keys, err := secretKeys(opts.Secrets)
	if err != nil {
		return nil, err
	}
	h := &Handler{db: db, fn: fn, keys: keys, sql: st, tolerance: opts.Tolerance, maxBody: opts.MaxBodyBytes,
		log: opts.Logger, now: opts.Now}
	if h.tolerance <= 0 {
		h.tolerance = 5 * time.Minute
	}
	if h.maxBody <= 0 {
		h.maxBody = 1 << 20
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.now == nil {
		h.now = time.Now
	}
	if err := h.createTable(context.Background()); err != nil {
		return nil, err
	}
	return h, nil
}

// createTable creates the inbox table and its index when missing. Two
// processes starting at once may race to create it; the loser finds it
// there.
func (h *Handler) createTable(ctx context.Context) error {
	for _, q := range h.sql.create {
		if _, err := h.db.ExecContext(ctx, q); err != nil {
			if _, probe := h.db.ExecContext(ctx, h.sql.probe); probe == nil {
				continue
			}
			return fmt.Errorf("inbox: create table: %w", err)
		}
	}
	return nil
}

// ServeHTTP takes one delivery: verify, decode, apply once, answer.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		answerError(w, http.StatusMethodNotAllowed, "method", "deliveries are POSTed")
		return
	}
	body, status, err := readBody(w, r, h.maxBody)
	if err != nil {
		answerError(w, status, "body", err.Error())
		return
	}
	id, err := h.verify(r.Header, body)
	var late *lateError
	switch {
	case errors.As(err, &late):
		answerError(w, http.StatusUnauthorized, "timestamp", err.Error())
		return
	case err != nil:
		answerError(w, http.StatusUnauthorized, "signature", err.Error())
		return
	}
	e, err := decodeEnvelope(id, body)
	if err != nil {
		answerError(w, http.StatusBadRequest, "envelope", err.Error())
		return
	}
	outcome, duplicate, err := h.apply(r.Context(), e)
	var failed *funcError
	switch {
	case errors.As(err, &failed):
		h.log.Error("inbox: the function failed; rolled back, intake will retry", "event_id", e.ID, "type", e.Type, "error", failed.err)
		answerError(w, http.StatusInternalServerError, "failed", "the event was not applied; retry later")
	case err != nil:
		h.log.Error("inbox: database", "event_id", e.ID, "error", err)
		answerError(w, http.StatusServiceUnavailable, "unavailable", "the event was not applied; retry later")
	default:
		answer(w, http.StatusOK, map[string]any{"outcome": outcome.String(), "duplicate": duplicate})
	}
}

// readBody reads at most limit bytes of the request's body.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, int, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d bytes", limit)
	case err != nil:
		return nil, http.StatusBadRequest, errors.New("body could not be read")
	}
	return b, 0, nil
}

// envelope is the wire form of Event.
type envelope struct {
	ID              string          `json:"id"`
	Type            string          `json:"type"`
	Kind            string          `json:"kind"`
	OrgID           string          `json:"org_id"`
	ConnectionID    string          `json:"connection_id"`
	Provider        string          `json:"provider"`
	ProviderEventID string          `json:"provider_event_id"`
	MessageID       string          `json:"message_id"`
	Replay          bool            `json:"replay"`
	ReplayOf        *string         `json:"replay_of"`
	OccurredAt      time.Time       `json:"occurred_at"`
	ReceivedAt      time.Time       `json:"received_at"`
	Subject         *Subject        `json:"subject"`
	Data            json.RawMessage `json:"data"`
	DataTruncated   bool            `json:"data_truncated"`
	BodyURL         string          `json:"body_url"`
}

// decodeEnvelope decodes a verified body: an envelope whose id is the
// signed webhook-id, with a type.
func decodeEnvelope(id string, body []byte) (Event, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return Event{}, fmt.Errorf("the body is not an event envelope: %v", err)
	}
	switch {
	case env.ID != id:
		return Event{}, fmt.Errorf("the envelope's id %q is not the webhook-id %q", env.ID, id)
	case env.Type == "":
		return Event{}, errors.New("the envelope has no type")
	}
	e := Event{ID: env.ID, Type: env.Type, Kind: env.Kind, OrgID: env.OrgID, ConnectionID: env.ConnectionID,
		Provider: env.Provider, ProviderEventID: env.ProviderEventID, MessageID: env.MessageID, Replay: env.Replay,
		OccurredAt: env.OccurredAt, ReceivedAt: env.ReceivedAt, Subject: env.Subject, Data: env.Data,
		DataTruncated: env.DataTruncated, BodyURL: env.BodyURL}
	if env.ReplayOf != nil {
		e.ReplayOf = *env.ReplayOf
	}
	return e, nil
}

func answer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// answerError answers status with {"error":{"code","message"}}.
func answerError(w http.ResponseWriter, status int, code, message string) {
	answer(w, status, map[string]any{"error": map[string]string{"code": code, "message": strings.TrimSpace(message)}})
}
