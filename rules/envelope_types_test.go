package rules

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

func TestFilterReturningAnEnvelopeFieldThatIsNotBoolIsRefused(t *testing.T) {
	e := newEngine(t, Config{})
	for _, tc := range []struct{ filter, want string }{
		{`event.type`, `filter must return a bool, not string: event.type; compare it, e.g. event.type == "value"`},
		{`event.id`, `filter must return a bool, not string: event.id;`},
		{`event.occurred_at`, `filter must return a bool, not string: event.occurred_at;`},
		{`event.replay_of`, `filter must return a bool, not string or null: event.replay_of;`},
		{`event.subject`, `filter must return a bool, not an object (the subject): event.subject; compare it, e.g. event.subject != null`},
		{`event.subject.app`, `filter must return a bool, not string: event.subject.app;`},
		{`event.type.size()`, `filter must return a bool, not int: event.type.size(); compare it, e.g. event.type.size() > 0`},
		{`event.tpye == "github.push"`, `undefined field 'tpye'`},
	} {
		err := e.Check(context.Background(), "", KindFilter, tc.filter)
		if intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(intake.ErrorMessage(err), tc.want) {
			t.Errorf("Check(%s) = %v, want EINVALID with %q", tc.filter, err, tc.want)
		}
	}
}

func TestFilterOnEnvelopeFieldsAndDataIsAccepted(t *testing.T) {
	e := newEngine(t, Config{})
	for _, filter := range []string{
		`event.replay`, `!event.data_truncated`, `event.type == "stripe.invoice.paid"`, `event.data.x == 1`,
		`event.subject != null && event.subject.app == "crm"`, `has(event.body_url)`, `event.data["a-b"] == "c"`,
		`timestamp(event.occurred_at) > timestamp("2024-01-01T00:00:00Z")`, `event.?subject.app.orValue("") == ""`,
	} {
		if err := e.Check(context.Background(), "", KindFilter, filter); err != nil {
			t.Errorf("Check(%s): %v", filter, err)
		}
	}
	// An ordering key is a string: an envelope field that is one is a key.
	if err := e.Check(context.Background(), "", KindKey, `event.type`); err != nil {
		t.Errorf("Check of the key event.type: %v", err)
	}
	if err := e.Check(context.Background(), "", KindKey, `event.replay`); intake.ErrorCode(err) != intake.EINVALID {
		t.Errorf("Check of the key event.replay = %v, want EINVALID", err)
	}
}

// A field of event.data has the shape the provider gave it, unknown when the
// filter is saved: it is accepted, as it may be a bool, and a value that is
// not one is an error at run time that says to compare it.
func TestFilterOnADataFieldIsDecidedAtRunTime(t *testing.T) {
	e := newEngine(t, Config{})
	const filter = `event.data.flag`
	if err := e.Check(context.Background(), "", KindFilter, filter); err != nil {
		t.Fatalf("Check(%s): %v, want it accepted", filter, err)
	}
	for _, tc := range []struct {
		data, want string
		ok         bool
	}{
		{`{"flag":true}`, "", true},
		{`{"flag":false}`, "", false},
		{`{"flag":"yes"}`, `filter returned a string, want bool; compare it, e.g. event.data.flag == "value"`, false},
		{`{"flag":3}`, `filter returned a number, want bool; compare it, e.g. event.data.flag > 0`, false},
	} {
		ok, err := e.Filter(context.Background(), filter, Input{Event: mustEvent(t, `{"type":"t","data":`+tc.data+`}`)})
		if ok != tc.ok || (tc.want == "") != (err == nil) || err != nil && err.Error() != tc.want {
			t.Errorf("Filter on %s = %v, %v; want %v, %q", tc.data, ok, err, tc.ok, tc.want)
		}
	}
}

func TestEnvelopeFieldsReadAsTheEnvelopeHasThem(t *testing.T) {
	e := newEngine(t, Config{})
	plain := Input{Event: mustEvent(t, stripeInvoice)}
	linked := Input{Event: mustEvent(t, `{"type":"crm.contact","subject":{"app":"crm","record_id":"r1"},"data":{},
		"occurred_at":"2024-05-01T10:00:00Z","data_truncated":true,"body_url":"https://x/b"}`)}
	for _, tc := range []struct {
		filter string
		in     Input
		want   bool
	}{
		{`event.data_truncated`, plain, false}, // omitted from the JSON when false
		{`event.data_truncated`, linked, true},
		{`event.body_url == ""`, plain, true},
		{`has(event.body_url)`, plain, false},
		{`has(event.body_url)`, linked, true},
		{`event.subject.app == "crm" && event.subject.record_id == "r1"`, linked, true},
		{`has(event.subject.app)`, linked, true},
		{`event.replay_of == null`, plain, true},
		{`timestamp(event.occurred_at) > timestamp("2024-01-01T00:00:00Z")`, linked, true},
	} {
		got, err := e.Filter(context.Background(), tc.filter, tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Filter(%s) = %v, %v; want %v", tc.filter, got, err, tc.want)
		}
	}
	nullSubject := Input{Event: mustEvent(t, `{"subject":null}`)}
	if got, err := e.Filter(context.Background(), `event.subject == null`, nullSubject); err != nil || !got {
		t.Errorf("event.subject == null on a null subject = %v, %v", got, err)
	}
	// An event given to a dry run may not be an envelope.
	if _, err := e.Filter(context.Background(), `event.subject == null`, Input{Event: mustEvent(t, `{}`)}); err == nil ||
		!strings.Contains(err.Error(), "no such key: subject") {
		t.Errorf("a field missing from the event: %v, want no such key", err)
	}
	_, err := e.Filter(context.Background(), `event.type == "x"`, Input{Event: mustEvent(t, `{"type":5}`)})
	if err == nil || !strings.Contains(err.Error(), "intake.Envelope.type is a number, want string") {
		t.Errorf("a number where the type is: %v, want an error naming the field", err)
	}
}

// The declared fields are intake.Envelope's, as its JSON has them: a field
// added to the envelope must be declared for rules to read it.
func TestEnvelopeDeclarationsMatchTheEnvelope(t *testing.T) {
	at := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	env := intake.NewEnvelope(&intake.Event{ID: "e", Type: "t", OccurredAt: at, ReceivedAt: at, ReplayOf: "r",
		Subject: &intake.Subject{App: "a", RecordID: "r"}, Data: json.RawMessage(`{}`), DataTruncated: true})
	env.BodyURL = "https://x/b"
	raw, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	decoded := mustEvent(t, string(raw))
	for object, value := range map[string]map[string]any{envelopeType: decoded, subjectType: decoded["subject"].(map[string]any)} {
		var got, want []string
		for k := range value {
			got = append(got, k)
		}
		for k, f := range celObjects[object] {
			want = append(want, k)
			if !f.holds(value[k]) {
				t.Errorf("%s.%s is %v in the JSON, not its declared %s", object, k, value[k], f.typ)
			}
		}
		sort.Strings(got)
		sort.Strings(want)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s fields in the JSON %v, declared %v", object, got, want)
		}
	}
}
