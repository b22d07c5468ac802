package provider

import (
	"crypto/sha1"
	"net/http"
	"net/url"
	"sort"

	"github.com/intakehq/intake"
)

// mandrillAdapter verifies Mandrill (Mailchimp Transactional) webhooks
// (https://mailchimp.com/developer/transactional/guides/track-respond-activity-webhooks/#authenticating-webhook-requests):
// X-Mandrill-Signature is the base64 HMAC-SHA1, under the webhook's key, of
// the webhook URL exactly as it was given (the public URL) followed by each
// POST parameter's name and value, sorted by name. The form's
// mandrill_events field is a JSON array; each item is one event. Mandrill
// checks the URL with a HEAD before it saves a webhook, and signs no time.
type mandrillAdapter struct{}

func init() { Register(mandrillAdapter{}) }

func (mandrillAdapter) Name() string { return "mandrill" }

func (mandrillAdapter) ValidateConfig(Config) error { return nil }

// mandrillHeadCheck reports whether r is the check Mandrill makes before it
// saves a webhook.
func mandrillHeadCheck(r *Request) bool { return r.Method == http.MethodHead }

// Challenge answers the HEAD check with 200, which is all Mandrill asks.
func (mandrillAdapter) Challenge(r *Request, _ [][]byte, _ Config) (Challenge, bool) {
	if !mandrillHeadCheck(r) {
		return Challenge{}, false
	}
	return Challenge{Status: http.StatusOK, ContentType: "text/plain"}, true
}

func (mandrillAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	if mandrillHeadCheck(r) {
		return nil // a handshake: it yields no events
	}
	header := headerValue(r.Header, "X-Mandrill-Signature")
	if header == "" {
		return sigError("mandrill: X-Mandrill-Signature header missing")
	}
	if r.URL == "" {
		return sigError("mandrill: the public URL is unknown")
	}
	sig, err := decodeBase64Sig(header)
	if err != nil {
		return sigError("mandrill: signature is not base64")
	}
	form, err := url.ParseQuery(string(r.Body))
	if err != nil {
		return sigError("mandrill: body is not a form")
	}
	names := make([]string, 0, len(form))
	for k, vs := range form {
		if len(vs) != 1 {
			// Mandrill sends each parameter once; which of several its
			// libraries would sign is not defined.
			return sigError("mandrill: a form parameter is repeated")
		}
		names = append(names, k)
	}
	sort.Strings(names)
	signed := []byte(r.URL)
	for _, k := range names {
		signed = append(signed, k...)
		signed = append(signed, form[k][0]...)
	}
	if anyKeySigned(sha1.New, secrets, [][]byte{sig}, signed) {
		return nil
	}
	return sigError("mandrill: no signature matches")
}

func (mandrillAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	if mandrillHeadCheck(r) {
		return Interpretation{EventType: "mandrill.challenge", Kind: intake.KindEvent, Challenge: true}, nil
	}
	form, err := url.ParseQuery(string(r.Body))
	if err != nil {
		return Interpretation{}, Permanent("mandrill: body is not a form: %v", err)
	}
	if _, ok := form["mandrill_events"]; !ok {
		return Interpretation{}, Permanent("mandrill: form has no mandrill_events")
	}
	items, err := decodeArray([]byte(form.Get("mandrill_events")))
	if err != nil {
		return Interpretation{}, Permanent("mandrill: mandrill_events is not a JSON array of events: %v", err)
	}
	if len(items) == 0 {
		// The test Mandrill sends when a webhook is saved.
		return Interpretation{EventType: "mandrill.test", Kind: intake.KindEvent, Challenge: true}, nil
	}
	specs := make([]EventSpec, 0, len(items))
	for _, it := range items {
		spec, err := mandrillEvent(it)
		if err != nil {
			return Interpretation{}, err
		}
		specs = append(specs, spec)
	}
	return batch("mandrill", "", specs), nil
}

// mandrillEvent reads one item: a message event ({"event":"open","_id":…,
// "ts":…,"msg":{…}}) or a sync event ({"type":"blacklist","action":"add",
// "ts":…,"reject":{…}}).
func mandrillEvent(it map[string]any) (EventSpec, error) {
	ts := idString(it["ts"])
	spec := EventSpec{Kind: intake.KindEvent, OccurredAt: unixTime(it["ts"])}
	if event := str(it, "event"); event != "" {
		id := str(it, "_id")
		spec.Type = "mandrill." + typeSegment(event)
		// Mandrill sends no event id: _id names the message, so the
		// event, its time and (for a click) the URL name the event; a retry
		// keeps them, where msg's counters may have moved on.
		spec.ProviderEventID = joinID(event, id, ts)
		if u := str(it, "url"); spec.ProviderEventID != "" && u != "" {
			spec.ProviderEventID += ":" + u
		}
		spec.ObjectIDs = appendID(spec.ObjectIDs, id)
	} else {
		kind, action := str(it, "type"), str(it, "action")
		if kind == "" || action == "" {
			return EventSpec{}, Permanent("mandrill: an event has neither event nor type and action")
		}
		spec.Type = "mandrill." + typeSegment(kind) + "." + typeSegment(action)
		email := firstOf(str(it, "reject", "email"), str(it, "entry", "email"))
		spec.ProviderEventID = joinID(kind, action, email, ts)
	}
	if spec.ProviderEventID == "" {
		spec.ProviderEventID = itemDigest("mandrill:", it)
	}
	spec.Data, spec.DataTruncated = itemData(it)
	return spec, nil
}
