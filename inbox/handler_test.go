package inbox

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests need no database; those that do (SQLite, PostgreSQL and
// MariaDB through their drivers) are in intake's internal/inboxcheck, so
// that this module and its tests import only the standard library.

func TestOnlyPostsWithinTheSizeLimitAreRead(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	keys, err := secretKeys([]string{testSecret})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{keys: keys, tolerance: time.Minute, maxBody: 64, now: func() time.Time { return now }}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/events", nil))
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != http.MethodPost {
		t.Fatalf("GET answered %d, Allow %q", w.Code, w.Header().Get("Allow"))
	}
	big := []byte(`{"id":"evt-big","type":"` + strings.Repeat("x", 100) + `"}`)
	r := httptest.NewRequest(http.MethodPost, "/events", bytes.NewReader(big))
	r.Header.Set("webhook-id", "evt-big")
	r.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	r.Header.Set("webhook-signature", sign(t, testSecret, "evt-big", now.Unix(), big))
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over the limit answered %d %s", w.Code, w.Body)
	}
}

var errNoDatabase = errors.New("no database in this test")

// noDatabase is a database/sql connector that never connects: what New
// reaches of it shows whether it refused the options first.
type noDatabase struct{}

func (noDatabase) Connect(context.Context) (driver.Conn, error) { return nil, errNoDatabase }
func (noDatabase) Driver() driver.Driver                        { return noDriver{} }

type noDriver struct{}

func (noDriver) Open(string) (driver.Conn, error) { return nil, errNoDatabase }

func TestNewRefusesBadOptionsBeforeTouchingTheDatabase(t *testing.T) {
	db := sql.OpenDB(noDatabase{})
	defer db.Close()
	apply := func(context.Context, *sql.Tx, Event) (Outcome, error) { return Handled, nil }
	for name, c := range map[string]struct {
		opts Options
		want string
	}{
		"no secret":           {Options{Dialect: "sqlite"}, "signing secret is required"},
		"a secret not whsec":  {Options{Secrets: []string{testSecret, "whsec_not base64!"}, Dialect: "sqlite"}, "secret 2 is not whsec_"},
		"no dialect":          {Options{Secrets: []string{testSecret}}, `dialect ""`},
		"an unknown dialect":  {Options{Secrets: []string{testSecret}, Dialect: "oracle"}, `dialect "oracle"`},
		"a table to inject":   {Options{Secrets: []string{testSecret}, Dialect: "sqlite", Table: "t; DROP TABLE applied"}, "table name"},
		"an upper-case table": {Options{Secrets: []string{testSecret}, Dialect: "sqlite", Table: "Inbox"}, "table name"},
	} {
		if _, err := New(db, apply, c.opts); err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, errNoDatabase) {
			t.Errorf("%s: New answered %v, want an error naming %q before the database", name, err, c.want)
		}
	}
	if _, err := New(db, apply, Options{Secrets: []string{testSecret}, Dialect: "sqlite"}); !errors.Is(err, errNoDatabase) {
		t.Fatalf("good options: New answered %v, want it to reach the database to create its table", err)
	}
	for name, err := range map[string]error{
		"no database": func() error {
			_, err := New(nil, apply, Options{Secrets: []string{testSecret}, Dialect: "sqlite"})
			return err
		}(),
		"no function": func() error {
			_, err := New(db, nil, Options{Secrets: []string{testSecret}, Dialect: "sqlite"})
			return err
		}(),
	} {
		if err == nil || !strings.Contains(err.Error(), "required") {
			t.Errorf("%s: New answered %v", name, err)
		}
	}
}
