// Package claimbody fills claimed messages with their stored requests, as
// both stores read them after a claim.
package claimbody

import (
	"encoding/json"

	"github.com/intakehq/intake"
)

// Bodies gives claimed messages their stored bodies as a store reads them
// after the claim: a message stays body-expired until its body is found.
type Bodies struct {
	byID map[string]*intake.Message
	ids  []string
}

// New prepares claims for their bodies.
func New(claims []intake.Claim) Bodies {
	b := Bodies{byID: make(map[string]*intake.Message, len(claims)), ids: make([]string, 0, len(claims))}
	for i := range claims {
		m := &claims[i].Message
		m.BodyExpired = true
		b.byID[m.ID] = m
		b.ids = append(b.ids, m.ID)
	}
	return b
}

// IDs are the messages whose bodies to read.
func (b Bodies) IDs() []string { return b.ids }

// Fill gives message id its stored request: the JSON of its header, and
// its body or the key of the body's object.
func (b Bodies) Fill(id string, header, body []byte, blobKey string) error {
	m := b.byID[id]
	if m == nil {
		return nil
	}
	m.Body, m.BlobKey, m.BodyExpired = body, blobKey, false
	return json.Unmarshal(header, &m.Header)
}

// Defer gives message id its stored header and the size of a body kept in
// the database but not read with the claim (larger than ClaimBodyLimit).
func (b Bodies) Defer(id string, header []byte, size int64) error {
	m := b.byID[id]
	if m == nil {
		return nil
	}
	m.DeferredBody, m.BodyExpired = size, false
	return json.Unmarshal(header, &m.Header)
}
