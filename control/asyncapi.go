package control

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/schema"
)

// AsyncAPI is an AsyncAPI 3.0 document describing the events intake
// delivers: for each catalogued event type a channel, the message a
// consumer receives on it (the envelope, its data the type's inferred
// schema, and the signature headers) and an operation receiving it. Code
// generators and event catalogs read it as they read a provider's own.
type AsyncAPI struct {
	AsyncAPI   string                       `json:"asyncapi"`
	Info       AsyncAPIInfo                 `json:"info"`
	Channels   map[string]AsyncAPIChannel   `json:"channels"`
	Operations map[string]AsyncAPIOperation `json:"operations"`
}

// AsyncAPIInfo names the document and its version.
type AsyncAPIInfo struct {
	Title       string `json:"title"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
}

// AsyncAPIChannel is one event type of one connection. Address is the type
// as the provider names it, nil when it holds characters an address may
// not (a channel parameter's braces, a query or fragment).
type AsyncAPIChannel struct {
	Address     *string                    `json:"address"`
	Title       string                     `json:"title"`
	Description string                     `json:"description,omitempty"`
	Messages    map[string]AsyncAPIMessage `json:"messages"`
}

// AsyncAPIMessage is the delivery a consumer receives for one event type.
type AsyncAPIMessage struct {
	Name        string         `json:"name"`
	Title       string         `json:"title"`
	Summary     string         `json:"summary,omitempty"`
	ContentType string         `json:"contentType"`
	Headers     map[string]any `json:"headers"`
	Payload     map[string]any `json:"payload"`
}

// AsyncAPIOperation is a consumer receiving a channel's messages.
type AsyncAPIOperation struct {
	Action   string        `json:"action"`
	Channel  AsyncAPIRef   `json:"channel"`
	Messages []AsyncAPIRef `json:"messages"`
}

// AsyncAPIRef points within the document.
type AsyncAPIRef struct {
	Ref string `json:"$ref"`
}

// AsyncAPIDocument describes, as an AsyncAPI 3.0 document, the event types
// of one connection (connectionID set) or of an org: an org's caller's own,
// while staff must name the org (orgID) or the connection.
func (p *Plane) AsyncAPIDocument(ctx context.Context, c Caller, orgID, connectionID string) (AsyncAPI, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return AsyncAPI{}, err
	}
	if connectionID != "" {
		if err := intake.CheckID("connection_id", connectionID); err != nil {
			return AsyncAPI{}, err
		}
	}
	sc := c.Scope
	if orgID != "" {
		if err := intake.CheckID("org_id", orgID); err != nil {
			return AsyncAPI{}, err
		}
		if !sc.Allows(orgID) {
			return AsyncAPI{}, intake.Errorf(intake.ENOTFOUND, "org %s not found", orgID)
		}
		sc = intake.Scope{OrgID: orgID}
	}
	if sc.Staff() && connectionID == "" {
		return AsyncAPI{}, intake.Errorf(intake.EINVALID, "the staff token must name an org (org_id) or a connection (connection_id)")
	}
	return budgeted(ctx, p, c, func(ctx context.Context) (AsyncAPI, error) {
		title := ""
		if connectionID != "" {
			conn, err := p.store.Connection(ctx, sc, connectionID)
			if err != nil {
				return AsyncAPI{}, err
			}
			title = "connection " + conn.Name
		} else {
			orgs, err := p.store.ListOrgs(ctx, sc)
			if err != nil {
				return AsyncAPI{}, err
			}
			if len(orgs) == 0 {
				return AsyncAPI{}, intake.Errorf(intake.ENOTFOUND, "org %s not found", sc.OrgID)
			}
			title = "org " + orgs[0].Name
		}
		types, err := p.store.ListEventTypes(ctx, sc, intake.EventTypeFilter{ConnectionID: connectionID, Now: p.now()})
		if err != nil {
			return AsyncAPI{}, err
		}
		keys := make([]intake.EventTypeKey, len(types))
		for i, t := range types {
			keys[i] = intake.EventTypeKey{ConnectionID: t.ConnectionID, Type: t.Type}
		}
		// The keys come from the scoped list: the states read are the
		// caller's.
		states, err := p.store.EventTypeStates(ctx, keys)
		if err != nil {
			return AsyncAPI{}, err
		}
		for i, k := range keys {
			types[i].Schema, types[i].Version = states[k].Schema, states[k].Version
		}
		return asyncAPIOf("intake events of "+title, types, connectionID == "")
	})
}

// asyncAPIOf writes the document of types; several names each channel
// after its connection too, as two connections may have a type each.
func asyncAPIOf(title string, types []intake.EventType, several bool) (AsyncAPI, error) {
	doc := AsyncAPI{AsyncAPI: "3.0.0", Info: AsyncAPIInfo{Title: title,
		Description: "The events intake delivers to consumers: each a JSON envelope whose `data` is described by the schema " +
			"inferred from the events received so far, signed with Standard Webhooks headers. The version counts the schemas' changes."},
		Channels: map[string]AsyncAPIChannel{}, Operations: map[string]AsyncAPIOperation{}}
	var changes int64
	taken := map[string]bool{}
	for _, t := range types {
		changes += t.Version
		name := t.Type
		if several {
			name = t.ConnectionName + "." + t.Type
		}
		key := asyncAPIKey(name, taken)
		data, err := dataSchema(t.Schema)
		if err != nil {
			return AsyncAPI{}, fmt.Errorf("event type %q of connection %s: %w", t.Type, t.ConnectionID, err)
		}
		var address *string
		if !strings.ContainsAny(t.Type, "{}?#") {
			address = &t.Type
		}
		doc.Channels[key] = AsyncAPIChannel{Address: address, Title: t.Type,
			Description: fmt.Sprintf("Events of type %q received by connection %q (%s).", t.Type, t.ConnectionName, t.ConnectionID),
			Messages: map[string]AsyncAPIMessage{key: {Name: t.Type, Title: t.Type, ContentType: "application/json",
				Summary: "An event of type " + strconv.Quote(t.Type) + " as delivered to a consumer.",
				Headers: signatureHeaders(), Payload: envelopeSchema(t, data)}}}
		doc.Operations["receive."+key] = AsyncAPIOperation{Action: "receive", Channel: AsyncAPIRef{Ref: "#/channels/" + key},
			Messages: []AsyncAPIRef{{Ref: "#/channels/" + key + "/messages/" + key}}}
	}
	doc.Info.Version = strconv.FormatInt(changes, 10)
	return doc, nil
}

// asyncAPIKey makes name a key AsyncAPI accepts (^[A-Za-z0-9.\-_]+$),
// unique among taken: other characters become "_", and a key already
// taken gets a number.
func asyncAPIKey(name string, taken map[string]bool) string {
	var b strings.Builder
	for _, r := range name {
		if r < 128 && (r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	base := b.String()
	if base == "" {
		base = "_"
	}
	key := base
	for n := 2; taken[key]; n++ {
		key = base + "-" + strconv.Itoa(n)
	}
	taken[key] = true
	return key
}

// dataSchema is an inferred schema as an AsyncAPI schema: the catalog's
// documents (draft 2020-12) use only keywords draft-07 reads alike (type,
// format, properties, required, additionalProperties, items), so it is the
// schema without its $schema, and with the properties named like a
// keyword of references ($ref, $id, …) moved to patternProperties: tools
// that resolve references take any "$ref" key for one. A type nothing was
// learnt of accepts any data.
func dataSchema(doc json.RawMessage) (any, error) {
	n, err := schema.Parse(doc)
	if err != nil || n == nil {
		return map[string]any{}, err
	}
	b, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	dollarsApart(out)
	return out, nil
}

// dollarsApart moves the properties whose names begin with "$", in s and
// the schemas within it, to patternProperties matching that name alone.
func dollarsApart(s any) {
	m, ok := s.(map[string]any)
	if !ok {
		return
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for name, p := range props {
			dollarsApart(p)
			if strings.HasPrefix(name, "$") {
				pattern, _ := m["patternProperties"].(map[string]any)
				if pattern == nil {
					pattern = map[string]any{}
					m["patternProperties"] = pattern
				}
				pattern["^"+regexp.QuoteMeta(name)+"$"] = p
				delete(props, name)
			}
		}
	}
	dollarsApart(m["additionalProperties"])
	dollarsApart(m["items"])
}

// envelopeSchema is intake.Envelope's schema with data as given.
func envelopeSchema(t intake.EventType, data any) map[string]any {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	id := func(desc string) map[string]any {
		return map[string]any{"type": "string", "format": "uuid", "description": desc}
	}
	at := func(desc string) map[string]any {
		return map[string]any{"type": "string", "format": "date-time", "description": desc}
	}
	return map[string]any{
		"type": "object",
		"required": []string{"id", "type", "kind", "org_id", "connection_id", "provider", "provider_event_id", "message_id",
			"replay", "replay_of", "occurred_at", "received_at", "subject", "data"},
		"properties": map[string]any{
			"id":                id("The event's id; deliveries of one event carry the same, so consumers deduplicate on it."),
			"type":              map[string]any{"type": "string", "const": t.Type},
			"kind":              map[string]any{"type": "string", "enum": []intake.EventKind{intake.KindEvent, intake.KindChangeNotice, intake.KindLinkUnfurl}},
			"org_id":            id("The org the event belongs to."),
			"connection_id":     map[string]any{"type": "string", "const": t.ConnectionID},
			"provider":          str("The provider the event came from."),
			"provider_event_id": str("The provider's own id of the event (empty when it gives none)."),
			"message_id":        id("The message (webhook) the event was interpreted from."),
			"replay":            map[string]any{"type": "boolean", "description": "Whether the event comes from a replayed message."},
			"replay_of":         map[string]any{"type": []string{"string", "null"}, "description": "The original message of a replay."},
			"occurred_at":       at("When the provider says the event happened."),
			"received_at":       at("When intake received its message."),
			"subject": map[string]any{"type": []string{"object", "null"}, "description": "The record the event is about, when known.",
				"properties": map[string]any{"app": map[string]any{"type": "string"}, "record_id": map[string]any{"type": "string"}}},
			"data":           data,
			"data_truncated": map[string]any{"type": "boolean", "description": "Set when the provider's data was larger than an event carries: data is then cut and may not match its schema."},
			"body_url":       map[string]any{"type": "string", "format": "uri", "description": "With data_truncated: a signed address serving the raw body, for 5 minutes."},
		},
	}
}

// signatureHeaders is the schema of the Standard Webhooks headers every
// delivery carries (package delivery signs them).
func signatureHeaders() map[string]any {
	return map[string]any{
		"type":     "object",
		"required": []string{"webhook-id", "webhook-timestamp", "webhook-signature"},
		"properties": map[string]any{
			"webhook-id": map[string]any{"type": "string", "description": "The event's id, the first part of what is signed."},
			"webhook-timestamp": map[string]any{"type": "string", "pattern": "^[0-9]+$",
				"description": "When the delivery was signed, in seconds since the Unix epoch."},
			"webhook-signature": map[string]any{"type": "string", "pattern": "^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$",
				"description": "Space-separated v1,<base64> HMAC-SHA256 signatures of id.timestamp.body, one per signing secret of the consumer."},
		},
	}
}
