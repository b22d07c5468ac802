package intake

import (
	"encoding/json"
	"time"
)

// Envelope is the public shape of an event: the JSON body every consumer
// receives, which filters, transforms and the event stream show as well.
// Its field names are a contract with consumers.
type Envelope struct {
	ID              string          `json:"id"`
	Type            string          `json:"type"`
	Kind            EventKind       `json:"kind"`
	OrgID           string          `json:"org_id"`
	ConnectionID    string          `json:"connection_id"`
	Provider        string          `json:"provider"`
	ProviderEventID string          `json:"provider_event_id"`
	MessageID       string          `json:"message_id"`
	Replay          bool            `json:"replay"`
	ReplayOf        *string         `json:"replay_of"`
	OccurredAt      time.Time       `json:"occurred_at"`
	ReceivedAt      time.Time       `json:"received_at"`
	Subject         *Subject        `json:"subject"`
	Data            json.RawMessage `json:"data"`
	DataTruncated   bool            `json:"data_truncated,omitempty"`
	BodyURL         string          `json:"body_url,omitempty"`
}

// NewEnvelope builds the envelope of an event.
func NewEnvelope(e *Event) Envelope {
	env := Envelope{
		ID: e.ID, Type: e.Type, Kind: e.Kind, OrgID: e.OrgID, ConnectionID: e.ConnectionID, Provider: e.Provider,
		ProviderEventID: e.ProviderEventID, MessageID: e.MessageID, Replay: e.Replay,
		OccurredAt: e.OccurredAt.UTC(), ReceivedAt: e.ReceivedAt.UTC(), Subject: e.Subject, Data: e.Data,
		DataTruncated: e.DataTruncated,
	}
	if e.ReplayOf != "" {
		env.ReplayOf = &e.ReplayOf
	}
	if len(env.Data) == 0 {
		env.Data = json.RawMessage("null")
	}
	return env
}
