package fanout

import (
	"context"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/rules"
)

// orgConsumers is one org's consumers as read for a batch, or why they
// could not be read.
type orgConsumers struct {
	list []intake.Consumer
	err  error
}

// Batch is what a claimed batch reads once, rather than once per event:
// each org's consumers, and the original requests of the events whose
// consumers have rules that may read them.
type Batch struct {
	consumers   map[string]orgConsumers
	requests    map[string]intake.OriginalRequest
	credentials map[string][]string // by connection, for the requests' view
	requestsErr error
}

// Consumer finds a consumer of the batch's read; ok is false when it is
// not there (deleted), err when its org's consumers could not be read.
func (b *Batch) Consumer(orgID, id string) (c intake.Consumer, ok bool, err error) {
	oc := b.consumers[orgID]
	if oc.err != nil {
		return c, false, oc.err
	}
	for _, c := range oc.list {
		if c.ID == id {
			return c, true, nil
		}
	}
	return c, false, nil
}

// Origin yields e's original request, as read for the batch, to its rules.
func (b *Batch) Origin(e *intake.Event) func() (rules.Origin, error) {
	return func() (rules.Origin, error) {
		if b.requestsErr != nil {
			return rules.Origin{}, b.requestsErr
		}
		req := b.requests[e.MessageID] // none once the message was deleted
		return rules.Origin{Header: req.Header, Query: req.Query, Credentials: b.credentials[e.ConnectionID]}, nil
	}
}

// orgConsumers reads an org's consumers, through the cache.
func (j *Judger) orgConsumers(ctx context.Context, orgID string) orgConsumers {
	list, err := j.consumers.Get(orgID, j.cfg.Clock.Now(), func() ([]intake.Consumer, error) {
		return j.cfg.Store.ListConsumers(ctx, intake.Scope{OrgID: orgID})
	})
	return orgConsumers{list, err}
}

// ReadsRequest reports whether a consumer's rules may read an event's
// original request: its filter, its transform, or a CEL ordering key.
func ReadsRequest(c *intake.Consumer) bool {
	return c.Filter != "" || c.Transform != "" || (c.Controls.Ordering != "" && c.Controls.Ordering != intake.OrderingSubject)
}

// Read reads the consumers of the events' orgs, and the original requests
// of the events whose org has a consumer that reads them.
func (j *Judger) Read(ctx context.Context, events []*intake.Event, reads func(*intake.Consumer) bool) *Batch {
	b := &Batch{consumers: map[string]orgConsumers{}}
	var ids, conns []string
	for _, e := range events {
		oc, ok := b.consumers[e.OrgID]
		if !ok {
			oc = j.orgConsumers(ctx, e.OrgID)
			b.consumers[e.OrgID] = oc
		}
		for i := range oc.list {
			if reads(&oc.list[i]) {
				ids = append(ids, e.MessageID)
				conns = append(conns, e.ConnectionID)
				break
			}
		}
	}
	if len(ids) > 0 {
		b.requests, b.requestsErr = j.cfg.Store.MessageRequests(ctx, ids)
		j.readCredentials(ctx, b, conns)
	}
	return b
}

// ReadFor reads what the calls of claimed routes need: their consumers,
// and the original requests of the events whose consumer transforms them.
func (j *Judger) ReadFor(ctx context.Context, claims []intake.RouteClaim) *Batch {
	b := &Batch{consumers: map[string]orgConsumers{}}
	var ids, conns []string
	for _, c := range claims {
		e := &c.Event
		if _, ok := b.consumers[e.OrgID]; !ok {
			b.consumers[e.OrgID] = j.orgConsumers(ctx, e.OrgID)
		}
		if cons, ok, _ := b.Consumer(e.OrgID, c.ConsumerID); ok && cons.Transform != "" {
			ids = append(ids, e.MessageID)
			conns = append(conns, e.ConnectionID)
		}
	}
	if len(ids) > 0 {
		b.requests, b.requestsErr = j.cfg.Store.MessageRequests(ctx, ids)
		j.readCredentials(ctx, b, conns)
	}
	return b
}
