package provider

import (
	"crypto/sha256"
	"sort"
	"strconv"
	"strings"

	"github.com/intakehq/intake"
)

// docusignAdapter verifies DocuSign Connect webhooks
// (https://developers.docusign.com/platform/webhooks/connect/hmac/): with
// HMAC enabled, DocuSign signs the raw body with each of the account's
// active HMAC keys and sends the base64 HMAC-SHA256 under each in
// X-DocuSign-Signature-1, -2, …; a request verifies when any signature
// matches any secret. DocuSign signs no time. A JSON (SIM) message is one
// event ({"event":"envelope-completed","data":{"envelopeId":…},…}); a
// legacy XML message is kept whole as docusign.xml.
type docusignAdapter struct{}

func init() { Register(docusignAdapter{}) }

func (docusignAdapter) Name() string { return "docusign" }

func (docusignAdapter) ValidateConfig(Config) error { return nil }

// docusignSignaturePrefix opens each signature header's name.
const docusignSignaturePrefix = "x-docusign-signature-"

// docusignSignatures are the decodable signatures of every
// X-DocuSign-Signature-N header, in N order.
func docusignSignatures(r *Request) [][]byte {
	type numbered struct {
		n   int
		sig []byte
	}
	var found []numbered
	for name, values := range r.Header {
		lower := strings.ToLower(name)
		if !strings.HasPrefix(lower, docusignSignaturePrefix) {
			continue
		}
		n, err := strconv.Atoi(lower[len(docusignSignaturePrefix):])
		if err != nil || n < 1 {
			continue
		}
		for _, v := range values {
			if sig, err := decodeBase64Sig(v); err == nil && len(sig) > 0 {
				found = append(found, numbered{n, sig})
			}
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].n < found[j].n })
	out := make([][]byte, len(found))
	for i, f := range found {
		out[i] = f.sig
	}
	return out
}

func (docusignAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	sigs := docusignSignatures(r)
	if len(sigs) == 0 {
		return sigError("docusign: no X-DocuSign-Signature-N header with a base64 signature")
	}
	if anyKeySigned(sha256.New, secrets, sigs, r.Body) {
		return nil
	}
	return sigError("docusign: no signature matches")
}

func (docusignAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		trimmed := strings.TrimSpace(string(r.Body))
		if !strings.HasPrefix(trimmed, "<") {
			return Interpretation{}, Permanent("docusign: body is neither a JSON object nor XML: %v", err)
		}
		// Legacy XML: deduplicated by body digest; consumers read the raw
		// body.
		spec := EventSpec{Type: "docusign.xml", Kind: intake.KindEvent}
		spec.Data, spec.DataTruncated = bodyData(r.Body)
		return single(spec), nil
	}
	event := str(m, "event")
	if event == "" {
		return Interpretation{}, Permanent("docusign: message has no event")
	}
	envelope := str(m, "data", "envelopeId")
	spec := EventSpec{
		// DocuSign sends no event id; the event, its envelope (and
		// recipient) and the time DocuSign generated the message name it,
		// and retryCount, which changes on a retry, does not.
		ProviderEventID: joinID(event, envelope, str(m, "generatedDateTime")),
		Type:            "docusign." + typeSegment(event),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["generatedDateTime"]),
	}
	if recipient := idString(lookup(m, "data", "recipientId")); spec.ProviderEventID != "" && recipient != "" {
		spec.ProviderEventID += ":" + recipient
	}
	if spec.ProviderEventID == "" {
		spec.ProviderEventID = itemDigest("docusign:", withoutKey(m, "retryCount"))
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, envelope)
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "data", "templateId"))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
