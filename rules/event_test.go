package rules

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

func testEnvelope(data string) intake.Envelope {
	return intake.NewEnvelope(&intake.Event{ID: "evt_1", Type: "stripe.invoice.paid", Kind: intake.KindEvent, MessageID: "msg_1",
		OccurredAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Data: json.RawMessage(data)})
}

// countedOrigin yields o (or err) and counts its calls.
func countedOrigin(o Origin, err error) (func() (Origin, error), *atomic.Int32) {
	var n atomic.Int32
	return func() (Origin, error) {
		n.Add(1)
		return o, err
	}, &n
}

func TestEventViewBuildsEachPartOnce(t *testing.T) {
	origin, calls := countedOrigin(Origin{Header: http.Header{"X-Github-Event": {"push"}}, Query: "a=1"}, nil)
	v := NewEventView(testEnvelope(`{"amount": 2500}`), origin)

	first, err := v.JSON()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(testEnvelope(`{"amount": 2500}`))
	if string(first) != string(want) {
		t.Errorf("JSON = %s, want the envelope as a consumer receives it, %s", first, want)
	}
	again, _ := v.JSON()
	if &again[0] != &first[0] {
		t.Error("JSON marshalled the envelope again")
	}
	in1, err := v.Input()
	if err != nil {
		t.Fatal(err)
	}
	in2, _ := v.Input()
	if reflect.ValueOf(in1.Event).Pointer() != reflect.ValueOf(in2.Event).Pointer() {
		t.Error("Input decoded the envelope again")
	}
	if reflect.ValueOf(in1.Headers).Pointer() != reflect.ValueOf(in2.Headers).Pointer() {
		t.Error("Input built the request's view again")
	}
	if in1.Event["type"] != "stripe.invoice.paid" || in1.Event["data"].(map[string]any)["amount"] != 2500.0 ||
		in1.Headers["x-github-event"] != "push" || in1.Query["a"] != "1" {
		t.Errorf("Input = %+v", in1)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the origin was asked %d times, want once", n)
	}
}

func TestEventViewReadsTheRequestOnlyWhenARuleDoes(t *testing.T) {
	origin, calls := countedOrigin(Origin{}, nil)
	v := NewEventView(testEnvelope(`{}`), origin)
	if _, err := v.JSON(); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Decoded(); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the origin was asked %d times for the envelope alone", n)
	}
}

func TestEventViewHidesTheConnectionsCredentials(t *testing.T) {
	origin, _ := countedOrigin(Origin{
		Header:      http.Header{"Authorization": {"Bearer s3cret"}, "X-Okta-Auth": {"s3cret"}, "X-Request-Id": {"r-1"}},
		Query:       "token=s3cret&page=2",
		Credentials: []string{"X-Okta-Auth"},
	}, nil)
	headers, query, err := NewEventView(testEnvelope(`{}`), origin).Request()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := headers["authorization"]; ok {
		t.Error("the Authorization header is shown")
	}
	if _, ok := headers["x-okta-auth"]; ok {
		t.Error("the header the connection names as a credential is shown")
	}
	if _, ok := query["token"]; ok {
		t.Error("the token parameter is shown")
	}
	if headers["x-request-id"] != "r-1" || query["page"] != "2" {
		t.Errorf("headers %v, query %v: what is no credential should be kept", headers, query)
	}
}

func TestEventViewSurfacesADecodeErrorButKeepsItsJSON(t *testing.T) {
	// Valid JSON, but a number no float64 holds: marshalled, not decoded.
	origin, _ := countedOrigin(Origin{}, nil)
	v := NewEventView(testEnvelope(`{"n": 1e400}`), origin)
	if _, err := v.JSON(); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	if _, err := v.Decoded(); intake.ErrorCode(err) != intake.EINVALID {
		t.Errorf("Decoded: %v, want EINVALID", err)
	}
	if _, err := v.Input(); intake.ErrorCode(err) != intake.EINVALID {
		t.Errorf("Input: %v, want EINVALID", err)
	}
	if _, _, err := v.Request(); err != nil {
		t.Errorf("Request: %v, want the request despite the envelope", err)
	}
}

func TestEventViewSurfacesAnEncodeErrorFromTheEnvelopesParts(t *testing.T) {
	origin, _ := countedOrigin(Origin{}, nil)
	v := NewEventView(testEnvelope(`{"n": `), origin)
	if _, err := v.JSON(); err == nil {
		t.Error("JSON of an envelope whose data is not JSON: no error")
	}
	if _, err := v.Decoded(); err == nil {
		t.Error("Decoded of an envelope whose data is not JSON: no error")
	}
	if _, err := v.Input(); err == nil {
		t.Error("Input of an envelope whose data is not JSON: no error")
	}
}

func TestEventViewSurfacesARequestErrorFromTheViewButNotFromTheJSON(t *testing.T) {
	unread := errors.New("requests unavailable")
	origin, calls := countedOrigin(Origin{}, unread)
	v := NewEventView(testEnvelope(`{}`), origin)
	if _, err := v.JSON(); err != nil {
		t.Errorf("JSON: %v", err)
	}
	if _, err := v.Decoded(); err != nil {
		t.Errorf("Decoded: %v", err)
	}
	if _, _, err := v.Request(); !errors.Is(err, unread) {
		t.Errorf("Request: %v, want %v", err, unread)
	}
	if _, err := v.Input(); !errors.Is(err, unread) {
		t.Errorf("Input: %v, want %v", err, unread)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the failing origin was asked %d times, want once", n)
	}
}

func TestEventViewIsSafeForConcurrentUse(t *testing.T) {
	origin, calls := countedOrigin(Origin{Header: http.Header{"X-A": {"1"}}}, nil)
	v := NewEventView(testEnvelope(`{"amount": 2500}`), origin)
	const n = 16
	bodies := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if i%2 == 0 {
				if _, err := v.Input(); err != nil {
					t.Error(err)
				}
			} else if _, _, err := v.Request(); err != nil {
				t.Error(err)
			}
			body, err := v.JSON()
			if err != nil {
				t.Error(err)
			}
			bodies[i] = body
		})
	}
	wg.Wait()
	for i := range bodies {
		if &bodies[i][0] != &bodies[0][0] {
			t.Fatalf("call %d had the envelope marshalled again", i)
		}
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("the origin was asked %d times, want once", got)
	}
}
