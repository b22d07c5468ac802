package inboxcheck

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/inbox"
	"github.com/intakehq/intake/internal/testkit"
)

// The inbox keeps its own copy of the envelope so that applications import
// it alone. A field renamed, added or dropped on one side and not the other
// fails here rather than in an application, as an event that decodes with
// a field quietly empty: intake's envelope with every field set, each to a
// value of its own, is delivered to the inbox, and each reaches the
// function's Event under the same name with the same value.
func TestTheInboxReadsEveryFieldOfTheEnvelopeIntakeSends(t *testing.T) {
	d := testDB{dialect: "sqlite", driver: "sqlite", dsn: sqliteDSN(filepath.Join(t.TempDir(), "app.db"))}
	d.db = d.reopen(t)
	l := newLedger(t, d)
	l.called = make(chan inbox.Event, 1)
	c := testkit.NewClock(t0)
	h := l.handler(t, c)

	var env intake.Envelope
	n := 0
	fill(t, "Envelope", reflect.ValueOf(&env).Elem(), &n)
	if a := deliver(t, h, env, c.Now()); a.status != http.StatusOK {
		t.Fatalf("answered %d %s", a.status, a.raw)
	}
	got := reflect.ValueOf(<-l.called)

	sent := reflect.ValueOf(env)
	for f := range sent.Type().Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); !f.IsExported() || name == "-" {
			continue
		}
		r := got.FieldByName(f.Name)
		if !r.IsValid() {
			t.Errorf("intake sends %s (%s), which the inbox's Event does not have", f.Name, f.Tag.Get("json"))
			continue
		}
		if s, g := mustJSON(t, sent.FieldByIndex(f.Index).Interface()), mustJSON(t, r.Interface()); s != g {
			t.Errorf("%s: intake sent %s, the function received %s", f.Name, s, g)
		}
	}
	for f := range got.Type().Fields() {
		if _, ok := sent.Type().FieldByName(f.Name); !ok {
			t.Errorf("the inbox's Event has %s, which intake does not send", f.Name)
		}
	}
}

// fill sets every field of v, nested structs' included, to a value no
// other field has (and not a zero value), so that a field the inbox does
// not read, or reads into another, shows.
func fill(t *testing.T, path string, v reflect.Value, n *int) {
	t.Helper()
	*n++
	switch {
	case v.Type() == reflect.TypeFor[json.RawMessage]():
		v.SetBytes(fmt.Appendf(nil, `{"field":%d}`, *n))
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(t0.Add(-time.Duration(*n) * time.Minute)))
	case v.Kind() == reflect.String:
		v.SetString(fmt.Sprintf("value-%d", *n))
	case v.Kind() == reflect.Bool:
		v.SetBool(true)
	case v.Kind() >= reflect.Int && v.Kind() <= reflect.Int64:
		v.SetInt(int64(*n))
	case v.Kind() == reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, path, v.Elem(), n)
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, path+"."+v.Type().Field(i).Name, v.Field(i), n)
			}
		}
	default:
		t.Fatalf("%s: a %s, which this test cannot fill: teach it", path, v.Type())
	}
}
