package rules_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/intakehq/intake/rules"
)

// A router decodes an event once and runs each matching consumer's filter.
func ExampleEngine_Filter() {
	e, err := rules.New(rules.Config{}, nil)
	if err != nil {
		panic(err)
	}
	defer e.Close()

	const filter = `event.type.startsWith("stripe.invoice.") && event.data.object.amount >= 100000`
	if err := e.Check(context.Background(), "org-1", rules.KindFilter, filter); err != nil {
		panic(err) // the API answers 400 with the position
	}
	ev, err := rules.DecodeEvent([]byte(`{"type": "stripe.invoice.paid", "data": {"object": {"amount": 250000}}}`))
	if err != nil {
		panic(err)
	}
	ok, err := e.Filter(context.Background(), filter, rules.Input{Event: ev})
	fmt.Println(ok, err)
	// Output: true <nil>
}

// A delivery runs its consumer's transform and sends what it returns.
func ExampleEngine_Transform() {
	e, err := rules.New(rules.Config{}, nil)
	if err != nil {
		panic(err)
	}
	defer e.Close()

	s := rules.Script{Scope: "org-id", Source: `function transform(event, context) {
  return {body: {text: event.type + " for " + context.app}, headers: {"X-Source": "intake"}};
}`}
	out, err := e.Transform(context.Background(), s, json.RawMessage(`{"type": "github.push"}`), map[string]string{"app": "ci"})
	if err != nil {
		fmt.Println(err) // recorded on the delivery as transform_error: …
		return
	}
	fmt.Println(string(out.Body), out.Header.Get("X-Source"))
	// Output: {"text":"github.push for ci"} intake
}

// A connection's interpret script turns a request of a provider intake does
// not know into events.
func ExampleEngine_Interpret() {
	e, err := rules.New(rules.Config{}, nil)
	if err != nil {
		panic(err)
	}
	defer e.Close()

	s := rules.Script{Scope: "org-id", Source: `function interpret(request) {
  return [{id: request.json.id, type: request.json.event, data: request.json.payload}];
}`}
	req := rules.NewRequest("POST", nil, nil, []byte(`{"id": "e-1", "event": "order.created", "payload": {"n": 1}}`))
	evs, err := e.Interpret(context.Background(), s, req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(evs[0].ProviderEventID, evs[0].Type, evs[0].Kind, string(evs[0].Data))
	// Output: e-1 order.created event {"n":1}
}
