package provider

import (
	"net/http"
	"strings"

	"github.com/intakehq/intake"
)

// msgraphAdapter verifies Microsoft Graph change notifications
// (https://learn.microsoft.com/graph/change-notifications-delivery-webhooks).
// Creating a subscription posts ?validationToken=…, answered with the token
// as plain text. Each notification then carries the subscription's
// clientState, which must equal one of the connection's secrets. Graph
// signs nothing and no time (rich notifications' validationTokens are JWTs
// that only Microsoft's keys verify; they are passed on in the data).
// Notifications come in batches; a basic one says only that a resource
// changed, so it becomes a change notice; lifecycle notifications are events.
type msgraphAdapter struct{}

func init() { Register(msgraphAdapter{}) }

func (msgraphAdapter) Name() string { return "msgraph" }

func (msgraphAdapter) ValidateConfig(Config) error { return nil }

// Challenge echoes validationToken, decoded, as plain text.
func (msgraphAdapter) Challenge(r *Request, _ [][]byte, _ Config) (Challenge, bool) {
	token := r.Query.Get("validationToken")
	if token == "" {
		return Challenge{}, false
	}
	return Challenge{Status: http.StatusOK, ContentType: "text/plain", Body: []byte(token)}, true
}

func (msgraphAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	if r.Query.Get("validationToken") != "" {
		return nil // a handshake: it yields no events
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return sigError("msgraph: body is not a JSON object")
	}
	items := objects(m, "value")
	if len(items) == 0 {
		return sigError("msgraph: no notifications to check")
	}
	for _, item := range items {
		if !anySecretEquals(secrets, str(item, "clientState")) {
			return sigError("msgraph: a notification's clientState matches no secret")
		}
	}
	return nil
}

func (msgraphAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	if r.Query.Get("validationToken") != "" {
		return Interpretation{EventType: "msgraph.validation", Kind: intake.KindEvent, Challenge: true}, nil
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("msgraph: body is not a JSON object: %v", err)
	}
	var specs []EventSpec
	for _, item := range objects(m, "value") {
		var spec EventSpec
		if lifecycle := str(item, "lifecycleEvent"); lifecycle != "" {
			spec.Type = "msgraph.lifecycle." + typeSegment(lifecycle)
			spec.Kind = intake.KindEvent
			spec.ProviderEventID = joinID("lifecycle", str(item, "subscriptionId"), lifecycle, str(item, "subscriptionExpirationDateTime"))
		} else {
			change := str(item, "changeType")
			if change == "" {
				return Interpretation{}, Permanent("msgraph: notification has neither changeType nor lifecycleEvent")
			}
			spec.Type = "msgraph." + msgraphResourceType(item) + typeSegment(change)
			// A basic notification carries no data and no id; a rich one
			// carries the resource, encrypted.
			spec.Kind = intake.KindChangeNotice
			if item["encryptedContent"] != nil {
				spec.Kind = intake.KindEvent
			}
		}
		spec.ObjectIDs = appendID(spec.ObjectIDs, str(item, "resourceData", "id"))
		spec.ObjectIDs = appendID(spec.ObjectIDs, str(item, "subscriptionId"))
		// clientState is a credential; consumers do not get it.
		spec.Data, spec.DataTruncated = itemData(withoutKey(item, "clientState"))
		specs = append(specs, spec)
	}
	return batch("msgraph", "", specs), nil
}

// msgraphResourceType is "<type>." from resourceData's @odata.type
// ("#Microsoft.Graph.Message" → "message."), "" when it names none.
func msgraphResourceType(item map[string]any) string {
	t := strings.ToLower(str(item, "resourceData", "@odata.type"))
	t = strings.TrimPrefix(strings.TrimPrefix(t, "#"), "microsoft.graph.")
	if t == "" {
		return ""
	}
	return typeSegment(t) + "."
}
