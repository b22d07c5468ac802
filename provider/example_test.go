package provider_test

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/intakehq/intake/provider"
)

// An adapter verifies a stored request against the connection's secrets,
// then interprets it into typed events. This is GitHub's own documented
// example signature, then a pull request event.
func ExampleLookup() {
	github, _ := provider.Lookup("github")
	secrets := [][]byte{[]byte("It's a Secret to Everybody")}

	doc := &provider.Request{Method: "POST", Body: []byte("Hello, World!"), ReceivedAt: time.Now(), Header: http.Header{
		"X-Hub-Signature-256": {"sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"},
	}}
	fmt.Println("documented example verifies:", github.Verify(doc, secrets, nil) == nil)

	doc.Body = []byte("Hello, World?")
	fmt.Println("tampered body refused:", errors.Is(github.Verify(doc, secrets, nil), provider.ErrSignature))

	pr := &provider.Request{Method: "POST", ReceivedAt: time.Now(), Body: []byte(`{"action":"opened","number":7}`), Header: http.Header{
		"X-Github-Event":    {"pull_request"},
		"X-Github-Delivery": {"72d3162e-cc78-11e3-81ab-4c9367dc0958"},
	}}
	in, err := github.Interpret(pr, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(in.ProviderEventID, in.Events[0].Type)
	// Output:
	// documented example verifies: true
	// tampered body refused: true
	// 72d3162e-cc78-11e3-81ab-4c9367dc0958 github.pull_request.opened
}
