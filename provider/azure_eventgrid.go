package provider

import (
	"errors"
	"net/http"
	"strings"

	"github.com/intakehq/intake"
)

// azureEventGridAdapter receives Azure Event Grid deliveries
// (https://learn.microsoft.com/azure/event-grid/webhook-event-delivery), in
// the Event Grid schema (a JSON array of events) or as CloudEvents 1.0
// (one structured event, a batch array, or binary mode's ce-* headers).
// Event Grid signs nothing; a webhook proves itself with a secret that
// Event Grid sends back: in the endpoint URL's query (config query_param,
// default "code": paste the URL with ?code=<secret>), which Event Grid
// sends with its handshakes and every delivery, or in a delivery header
// (config header, default Authorization, "Bearer " optional). Both
// handshakes are answered inline only when the secret is there: the Event
// Grid schema's SubscriptionValidationEvent with {"validationResponse":
// code}, and CloudEvents' OPTIONS abuse-protection request with
// WebHook-Allowed-Origin. Each array item is one event with id "id", type
// azure_eventgrid.<eventType or type>. Event Grid signs no time. With
// config entra_tenant, a delivery must also carry a Microsoft Entra ID
// token (azure_entra.go).
type azureEventGridAdapter struct{}

func init() { Register(azureEventGridAdapter{}) }

func (azureEventGridAdapter) Name() string { return "azure_eventgrid" }

// eventGridValidation is the eventType of Event Grid's subscription
// validation handshake.
const eventGridValidation = "Microsoft.EventGrid.SubscriptionValidationEvent"

// eventGridNames are a connection's query parameter and header names.
func eventGridNames(cfg Config) (param, header string, err error) {
	if param, err = stringSetting(cfg, "query_param"); err != nil {
		return "", "", err
	}
	if header, err = stringSetting(cfg, "header"); err != nil {
		return "", "", err
	}
	if param == "" {
		param = "code"
	}
	if header == "" {
		header = "Authorization"
	}
	return param, header, nil
}

func (azureEventGridAdapter) ValidateConfig(cfg Config) error {
	if _, _, err := eventGridNames(cfg); err != nil {
		return err
	}
	_, err := readEntraConfig(cfg)
	return err
}

func (azureEventGridAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	param, header, err := eventGridNames(cfg)
	if err != nil {
		return configError("azure_eventgrid", err)
	}
	entra, err := readEntraConfig(cfg)
	if err != nil {
		return configError("azure_eventgrid", err)
	}
	fromQuery := r.Query.Get(param)
	fromHeader := strings.TrimSpace(headerValue(r.Header, header))
	if fromQuery == "" && fromHeader == "" {
		return sigError("azure_eventgrid: no secret in query parameter %q or header %s", param, header)
	}
	bearer, _ := strings.CutPrefix(fromHeader, "Bearer ")
	if !anySecretEquals(secrets, fromQuery) && !anySecretEquals(secrets, fromHeader) && !anySecretEquals(secrets, strings.TrimSpace(bearer)) {
		return sigError("azure_eventgrid: the secret sent matches no secret of the connection")
	}
	// The secret first: a request without it fetches no keys.
	if entra.tenant != "" {
		return verifyEntra(r, entra)
	}
	return nil
}

// eventGridValidationCode is the validation code when r is Event Grid's
// subscription validation: an array of exactly one validation event.
func eventGridValidationCode(r *Request) (string, bool) {
	if r.Method != http.MethodPost {
		return "", false
	}
	items, err := decodeArray(r.Body)
	if err != nil || len(items) != 1 || str(items[0], "eventType") != eventGridValidation {
		return "", false
	}
	code := str(items[0], "data", "validationCode")
	return code, code != ""
}

// eventGridAbuseCheck reports whether r is the CloudEvents webhook
// abuse-protection request, and the origin it names.
func eventGridAbuseCheck(r *Request) (string, bool) {
	origin := headerValue(r.Header, "WebHook-Request-Origin")
	return origin, r.Method == http.MethodOptions && origin != ""
}

// Challenge answers either handshake, only when the request carries the
// connection's secret; anything else is an ordinary delivery.
func (a azureEventGridAdapter) Challenge(r *Request, secrets [][]byte, cfg Config) (Challenge, bool) {
	if origin, ok := eventGridAbuseCheck(r); ok {
		if a.Verify(r, secrets, cfg) != nil {
			return Challenge{Status: http.StatusUnauthorized, ContentType: "text/plain"}, true
		}
		h := http.Header{}
		h.Set("WebHook-Allowed-Origin", origin)
		h.Set("WebHook-Allowed-Rate", "*")
		return Challenge{Status: http.StatusOK, ContentType: "text/plain", Header: h}, true
	}
	code, ok := eventGridValidationCode(r)
	if !ok {
		return Challenge{}, false
	}
	if a.Verify(r, secrets, cfg) != nil {
		return Challenge{Status: http.StatusUnauthorized, ContentType: "text/plain"}, true
	}
	body, err := marshalJSON(map[string]string{"validationResponse": code})
	if err != nil {
		return Challenge{}, false
	}
	return Challenge{Status: http.StatusOK, ContentType: "application/json", Body: body}, true
}

var errNoEventGridType = errors.New("an event has no eventType or type")

// eventGridSpec is one Event Grid or CloudEvents item as an event.
func eventGridSpec(item map[string]any) (EventSpec, error) {
	typ, when, source := str(item, "eventType"), item["eventTime"], str(item, "topic")
	if str(item, "specversion") != "" {
		typ, when, source = str(item, "type"), item["time"], str(item, "source")
	}
	if typ == "" {
		return EventSpec{}, errNoEventGridType
	}
	spec := EventSpec{
		// Event Grid sends the same id with every retry of an event.
		ProviderEventID: idString(item["id"]),
		Type:            "azure_eventgrid." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(when),
	}
	if spec.ProviderEventID == "" {
		spec.ProviderEventID = itemDigest("azure_eventgrid:", item)
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(item, "subject"))
	spec.ObjectIDs = appendID(spec.ObjectIDs, source)
	spec.Data, spec.DataTruncated = itemData(item)
	return spec, nil
}

func (azureEventGridAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	if _, ok := eventGridAbuseCheck(r); ok {
		return Interpretation{EventType: "azure_eventgrid.abuse_protection", Kind: intake.KindEvent, Challenge: true}, nil
	}
	if _, ok := eventGridValidationCode(r); ok {
		return Interpretation{EventType: "azure_eventgrid.subscription_validation", Kind: intake.KindEvent, Challenge: true}, nil
	}
	if typ := headerValue(r.Header, "ce-type"); typ != "" {
		// CloudEvents binary mode: the attributes are headers, the body
		// is the data.
		data, truncated := bodyData(r.Body)
		spec := EventSpec{
			ProviderEventID: headerValue(r.Header, "ce-id"),
			Type:            "azure_eventgrid." + typeSegment(typ),
			Kind:            intake.KindEvent,
			OccurredAt:      unixTime(headerValue(r.Header, "ce-time")),
			Data:            data,
			DataTruncated:   truncated,
		}
		if spec.ProviderEventID == "" {
			return Interpretation{}, Permanent("azure_eventgrid: a binary-mode CloudEvent has no ce-id")
		}
		spec.ObjectIDs = appendID(spec.ObjectIDs, headerValue(r.Header, "ce-subject"))
		spec.ObjectIDs = appendID(spec.ObjectIDs, headerValue(r.Header, "ce-source"))
		return single(spec), nil
	}
	body := strings.TrimSpace(string(r.Body))
	if strings.HasPrefix(body, "{") {
		m, err := decodeObject(r.Body)
		if err != nil {
			return Interpretation{}, Permanent("azure_eventgrid: body is not JSON: %v", err)
		}
		spec, err := eventGridSpec(m)
		if err != nil {
			return Interpretation{}, Permanent("azure_eventgrid: %v", err)
		}
		return single(spec), nil
	}
	items, err := decodeArray(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("azure_eventgrid: body is neither an event nor an array of events: %v", err)
	}
	if len(items) == 0 {
		return Interpretation{}, Permanent("azure_eventgrid: the array holds no events")
	}
	specs := make([]EventSpec, 0, len(items))
	for _, item := range items {
		spec, err := eventGridSpec(item)
		if err != nil {
			return Interpretation{}, Permanent("azure_eventgrid: %v", err)
		}
		specs = append(specs, spec)
	}
	return batch("azure_eventgrid", "", specs), nil
}
