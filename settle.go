package intake

import (
	"maps"
	"time"
)

// A processing result settles in three steps (DESIGN §7): the store reads
// what the results of a batch need (SettleRead), DecideSettlements decides
// the rows to write, and the store writes them, one statement per kind of
// row for the whole batch.

// Settlement is the result of one processing attempt of a message.
type Settlement struct {
	MessageID       string
	Attempt         int
	To              MessageState
	Outcome         string
	ErrorCode       string
	ErrorMessage    string
	NextAttemptAt   time.Time // for failed; from the now the settle passes, which a store on a shared clock keeps as the delay
	ProviderEventID string
	Identity        *Identity // nil: not deduplicated (change notice, replay)
	Events          []Event
	// FanOuts are the events' fan-outs, by event id, judged before the
	// settle: an event with one is created fanned out, off the event queue.
	// An event without one (its consumers could not be judged, or the
	// settle finds it a subject, on which its consumers and envelope
	// depend) waits for a router's claim.
	FanOuts map[string]FanOut
}

// Settled is what a settlement did.
type Settled struct {
	State   MessageState
	Outcome string
	// Events are the events created, as they were written.
	Events []Event
	// Calls are the routes of fanned-out events that the same commit
	// leased to the caller (see FanOut.Lease): their first calls, to be
	// made with no claim.
	Calls []RouteClaim
}

// TimedSettlement is a settlement with the time it settles at.
type TimedSettlement struct {
	Now time.Time
	Settlement
}

// ConnKey is a key within a connection: a deduplication key, a provider
// object id or a provider event id.
type ConnKey struct{ Connection, Key string }

// SettlingMessage is what a settle reads of the message it settles.
type SettlingMessage struct {
	ConnectionID string
	OrgID        string
	EndpointID   string
	State        MessageState
	Attempt      int
}

// SettleRead is what a store reads for a batch of processing results.
type SettleRead struct {
	// Messages are the settled messages by id (absent: not found).
	Messages map[string]SettlingMessage
	// Identities are the recorded identities of the results' keys, expired
	// or not, by (connection, identity key).
	Identities map[ConnKey]Identity
	// Subjects are the subject links of the events' object ids, by
	// (connection, object id).
	Subjects map[ConnKey]Subject
	// Originals are the ids of the non-replay events that hold the events'
	// provider event ids, by (connection, provider event id).
	Originals map[ConnKey]string
	// Consumers are the consumers the fan-outs name (absent: deleted).
	Consumers map[string]ConsumerLane
	// Issues are the request issues of the messages' connections and the
	// rule issues of the fan-outs' consumers, in any status;
	// ConnectionNames and ConsumerNames name their subjects.
	Issues          []Issue
	ConnectionNames map[string]string
	ConsumerNames   map[string]string
}

// SettleKeys are the keys a store reads for a batch of results.
type SettleKeys struct {
	// Identities are the identity keys of the results that judge one, by
	// message (the message's connection scopes each).
	Identities map[string]string
	Subjects   []ConnKey
	Originals  []ConnKey
	Consumers  []string
}

// KeysOf lists what a batch of results needs read.
func KeysOf(batch []TimedSettlement) SettleKeys {
	k := SettleKeys{Identities: map[string]string{}}
	subjects, originals, consumers := map[ConnKey]bool{}, map[ConnKey]bool{}, map[string]bool{}
	for _, r := range batch {
		if r.To == MessageProcessed && r.Identity != nil {
			k.Identities[r.MessageID] = r.Identity.Key
		}
		for _, e := range r.Events {
			for _, obj := range e.ObjectIDs {
				if key := (ConnKey{e.ConnectionID, obj}); e.Subject == nil && !subjects[key] {
					subjects[key] = true
					k.Subjects = append(k.Subjects, key)
				}
			}
			if key := (ConnKey{e.ConnectionID, e.ProviderEventID}); e.ProviderEventID != "" && !originals[key] {
				originals[key] = true
				k.Originals = append(k.Originals, key)
			}
			for _, fr := range r.FanOuts[e.ID].Routes {
				if !consumers[fr.ConsumerID] {
					consumers[fr.ConsumerID] = true
					k.Consumers = append(k.Consumers, fr.ConsumerID)
				}
			}
		}
	}
	return k
}

// IdentityPut is an identity to record: none was, or the one recorded
// had expired.
type IdentityPut struct {
	ConnectionID string
	OrgID        string
	Identity     Identity
}

// MessageMove is a message moved by its settle, with the record of the
// attempt.
type MessageMove struct {
	Settlement Settlement
	OrgID      string
	// SettledAt is when it settled for good (zero for failed).
	SettledAt time.Time
	Attempt   Attempt
}

// SettleDecision is what a batch of processing results writes.
type SettleDecision struct {
	// Results are each result's outcome, in the batch's order: what it
	// did, or why it was refused (it then writes nothing).
	Results []SettleResult

	Identities []IdentityPut
	// Events are inserted (a non-replay event whose provider event id an
	// event holds already is not among them).
	Events     []Event
	Routes     []Route
	Deliveries []Delivery
	Moves      []MessageMove
	Notices    []Notice
	// Issues are the request issues (and the fan-outs' rule issues) the
	// results opened, counted, reopened or resolved, each at most once;
	// IssueItems the messages (and events) they touched.
	Issues     []IssueWrite
	IssueItems []IssueItem
	// WakeEvents: an event waits for a router's fan-out; WakeRoutes: a
	// route waits, unleased, for a delivery claim.
	WakeEvents, WakeRoutes bool
}

// SettleResult is one result's part of a decision.
type SettleResult struct {
	Settled Settled
	Err     error
}

// DecideSettlements is the one place processing results become state. Each
// result in turn, seeing what those before it decided: a stale attempt is
// refused; deduplication is judged against the identity on record; the
// message moves through the transition table; its events are created (a
// replay naming its original, a repeat of a provider event left out), each
// fanned out with it when the worker judged its fan-out and the settle
// found it no subject; a message that settles dead, or ignored for its
// signature, leaves a notice about its endpoint and counts under its
// connection's request issue, which a verified request resolves. A refused
// result writes nothing, so no subset of a message's events is ever
// written alone.
func DecideSettlements(in SettleRead, batch []TimedSettlement) SettleDecision {
	d := SettleDecision{Results: make([]SettleResult, len(batch))}
	issues := newIssueBook(in.Issues, nil)
	identities := map[ConnKey]Identity{} // recorded by results before
	originals := map[ConnKey]string{}    // created by results before
	settled := map[string]bool{}         // messages moved by results before
	for i, r := range batch {
		m, found := in.Messages[r.MessageID]
		switch {
		case !found:
			d.Results[i].Err = Errorf(ENOTFOUND, "message %s not found", r.MessageID)
			continue
		case settled[r.MessageID] || m.State != MessageProcessing || m.Attempt != r.Attempt:
			d.Results[i].Err = Errorf(ESTALE, "attempt %d of message %s is not current", r.Attempt, r.MessageID)
			continue
		}
		s := r.Settlement
		var put *IdentityPut
		if s.To == MessageProcessed && s.Identity != nil {
			key := ConnKey{m.ConnectionID, s.Identity.Key}
			prior, ok := identities[key]
			if !ok {
				prior, ok = in.Identities[key]
			}
			var live *Identity
			if ok && (prior.ExpiresAt.IsZero() || prior.ExpiresAt.After(r.Now)) {
				live = &prior
			}
			if verdict := Judge(live, *s.Identity); verdict != "" {
				s.To, s.Outcome, s.Events = MessageIgnored, verdict, nil
			} else {
				put = &IdentityPut{ConnectionID: m.ConnectionID, OrgID: m.OrgID, Identity: *s.Identity}
			}
		}
		if err := CheckMessageTransition(m.State, s.To); err != nil {
			d.Results[i].Err = err
			continue
		}
		out := Settled{State: s.To, Outcome: s.Outcome}
		var part SettleDecision
		created := map[ConnKey]string{} // by this result, kept if it applies
		for _, e := range s.Events {
			found := false // a subject, which the fan-out was judged without
			if e.Subject == nil {
				for _, obj := range e.ObjectIDs {
					if sub, ok := in.Subjects[ConnKey{e.ConnectionID, obj}]; ok {
						e.Subject, found = &sub, true
						break
					}
				}
			}
			f, judged := s.FanOuts[e.ID]
			judged = judged && !found && !e.Replay
			if e.ProviderEventID != "" {
				key := ConnKey{e.ConnectionID, e.ProviderEventID}
				original, ok := created[key]
				if !ok {
					if original, ok = originals[key]; !ok {
						original = in.Originals[key]
					}
				}
				switch {
				case e.Replay:
					e.ReplayOf = original
				case original != "":
					continue // the provider event has its event already
				default:
					created[key] = e.ID
				}
			}
			if judged {
				e.State, e.Attempt, e.NextAttemptAt = EventPending, 1, time.Time{}
				f.EventID, f.Attempt = e.ID, 1
				fo, err := DecideFanOut(FanOutRead{Event: e, Leased: true, Consumers: in.Consumers, ConsumerNames: in.ConsumerNames, book: issues}, f, r.Now)
				if err != nil {
					d.Results[i].Err = err
					out = Settled{}
					break
				}
				e.State = fo.State
				part.Routes = append(part.Routes, fo.Routes...)
				part.Deliveries = append(part.Deliveries, fo.Deliveries...)
				part.WakeRoutes = part.WakeRoutes || fo.Wake
				for _, c := range fo.Calls {
					c.Event = e
					out.Calls = append(out.Calls, c)
				}
			} else {
				part.WakeEvents = part.WakeEvents || e.AwaitsFanOut()
			}
			part.Events = append(part.Events, e)
			out.Events = append(out.Events, e)
		}
		if d.Results[i].Err != nil {
			continue
		}
		move := MessageMove{Settlement: s, OrgID: m.OrgID,
			Attempt: Attempt{Attempt: s.Attempt, State: s.To, Outcome: s.Outcome, ErrorCode: s.ErrorCode, ErrorMessage: s.ErrorMessage, At: r.Now}}
		if s.To != MessageFailed {
			move.SettledAt = r.Now
		}
		settled[r.MessageID] = true
		maps.Copy(originals, created)
		if put != nil {
			identities[ConnKey{put.ConnectionID, put.Identity.Key}] = put.Identity
			d.Identities = append(d.Identities, *put)
		}
		d.Events = append(d.Events, part.Events...)
		d.Routes = append(d.Routes, part.Routes...)
		d.Deliveries = append(d.Deliveries, part.Deliveries...)
		d.Moves = append(d.Moves, move)
		if n, ok := settlementNotice(m, s, r.Now); ok {
			d.Notices = append(d.Notices, n)
		}
		decideRequestIssues(issues, m, in.ConnectionNames[m.ConnectionID], s, r.Now)
		d.WakeEvents, d.WakeRoutes = d.WakeEvents || part.WakeEvents, d.WakeRoutes || part.WakeRoutes
		d.Results[i].Settled = out
	}
	d.Issues, d.IssueItems = issues.writes, issues.added
	d.Notices = append(d.Notices, issues.notices...)
	return d
}

// decideRequestIssues counts a message whose signature did not verify
// under its connection's request issue; a verified one (processed, or
// ignored as a duplicate or a conflict) resolves it.
func decideRequestIssues(b *issueBook, m SettlingMessage, name string, s Settlement, now time.Time) {
	switch {
	case s.To == MessageIgnored && s.Outcome == OutcomeSignature:
		b.fail(issueFailure{OrgID: m.OrgID, SubjectID: m.ConnectionID, SubjectName: name, Kind: IssueRequest, Cause: CauseSignature,
			Error: s.ErrorMessage, MessageID: s.MessageID, At: now})
	case s.To == MessageProcessed, s.To == MessageIgnored:
		b.succeed(m.OrgID, IssueRequest, m.ConnectionID, name, now)
	}
}

// settlementNotice is the notice a settlement leaves, if any: grouped by
// endpoint, so a burst of dead or forged messages at one endpoint is one
// notice with a count.
func settlementNotice(m SettlingMessage, s Settlement, now time.Time) (Notice, bool) {
	n := Notice{ID: NewID(), OrgID: m.OrgID, Subject: m.EndpointID, At: now.UTC()}
	switch {
	case s.To == MessageDead:
		n.Topic = NoticeMessageDead
		n.Detail = "message " + s.MessageID + " is dead"
		if s.ErrorCode != "" {
			n.Detail += " (" + s.ErrorCode + ")"
		}
		if s.ErrorMessage != "" {
			n.Detail += ": " + s.ErrorMessage
		}
	case s.To == MessageIgnored && s.Outcome == OutcomeSignature:
		n.Topic = NoticeSignatureFailures
		n.Detail = "message " + s.MessageID + " was ignored: " + s.ErrorMessage
	default:
		return Notice{}, false
	}
	return n, true
}
