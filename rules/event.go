package rules

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/intakehq/intake"
)

// Origin is the request an event came from, for its rules' view of it.
type Origin struct {
	Header      http.Header
	Query       string   // raw, as received
	Credentials []string // header names the connection makes credentials, never shown
}

// EventView is what the rules of one event see: a connection's filter, or
// its consumers' filters, ordering keys and transforms. Each part is built
// once however many rules ask, and only when one does. It is safe for
// concurrent use.
type EventView struct {
	env    intake.Envelope
	origin func() (Origin, error)

	bodyOnce sync.Once
	body     []byte
	bodyErr  error

	eventOnce sync.Once
	event     map[string]any
	eventErr  error

	requestOnce sync.Once
	headers     map[string]string
	query       map[string]string
	requestErr  error
}

// NewEventView returns the rules' view of the event env is the envelope
// of. origin yields the request the event came from; it is called once,
// when a rule first reads the request, so a router reads a batch's
// requests only for rules that may read them.
func NewEventView(env intake.Envelope, origin func() (Origin, error)) *EventView {
	return &EventView{env: env, origin: origin}
}

// Envelope is the event as its consumers receive it.
func (v *EventView) Envelope() intake.Envelope {
	return v.env
}

// JSON is the envelope as a consumer receives it, and as a transform reads
// it. The same bytes are returned on every call: they must not be changed.
func (v *EventView) JSON() ([]byte, error) {
	v.bodyOnce.Do(func() { v.body, v.bodyErr = json.Marshal(v.env) })
	return v.body, v.bodyErr
}

// Decoded is the envelope decoded for CEL (see DecodeEvent), shared by
// every rule that reads it: it must not be changed.
func (v *EventView) Decoded() (map[string]any, error) {
	v.eventOnce.Do(func() {
		body, err := v.JSON()
		if err != nil {
			v.eventErr = err
			return
		}
		v.event, v.eventErr = DecodeEvent(body)
	})
	return v.event, v.eventErr
}

// Request is the original request's headers and query as RequestView gives
// them. An error means the request could not be read: a rule that reads it
// has no verdict.
func (v *EventView) Request() (headers, query map[string]string, err error) {
	v.requestOnce.Do(func() {
		o, err := v.origin()
		if err != nil {
			v.requestErr = err
			return
		}
		v.headers, v.query = RequestView(o.Header, o.Query, o.Credentials...)
	})
	return v.headers, v.query, v.requestErr
}

// Input is a filter's or an ordering key's view: the decoded envelope and
// the request.
func (v *EventView) Input() (Input, error) {
	ev, err := v.Decoded()
	if err != nil {
		return Input{}, err
	}
	headers, query, err := v.Request()
	if err != nil {
		return Input{}, err
	}
	return Input{Event: ev, Headers: headers, Query: query}, nil
}
