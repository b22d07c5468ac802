package worker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/provider"
	"github.com/intakehq/intake/rules"
)

// TestDecide judges what an attempt's load found, with no store: every way
// an attempt can stop, and every way it can finish.
func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	retryAt := t0.Add(30 * time.Second)
	msg := intake.Message{ID: "m1", EndpointID: "ep1", Digest: "d1", MaxAttempts: 6, ReceivedAt: t0}
	ev := intake.Event{ID: "e1", MessageID: "m1"}
	failing := errors.New("connection refused")
	signature := fmt.Errorf("no secret matched: %w", provider.ErrSignature)
	cases := []struct {
		name    string
		found   found
		kind    verdictKind
		to      intake.MessageState
		code    string // the error code, or the outcome when settled
		message string
		// identity is the identity key the settle records; events how many
		// events it writes.
		identity string
		events   int
	}{
		{name: "the last attempt's lease ran out", found: found{claim: intake.Claim{Message: msg, Attempt: 7}},
			kind: verdictDead, code: intake.ErrCodeLeaseExpired, message: "the last attempt did not finish before its lease expired"},
		{name: "the body expired", found: found{claim: claim(msg, 1, func(m *intake.Message) { m.BodyExpired = true })},
			kind: verdictDead, code: intake.ErrCodeBodyExpired, message: "the stored body has expired"},
		{name: "the body's object is gone", found: stopped(msg, 1, stepObject, intake.Errorf(intake.ENOTFOUND, "no object")),
			kind: verdictDead, code: intake.ErrCodeBodyExpired, message: "the body's object is gone from object storage"},
		{name: "object storage failed", found: stopped(msg, 1, stepObject, failing),
			kind: verdictRetry, code: intake.ErrCodeTransient, message: "read the body from object storage: connection refused"},
		{name: "object storage failed the last attempt", found: stopped(msg, 6, stepObject, failing),
			kind: verdictDead, code: intake.ErrCodeTransient, message: "read the body from object storage: connection refused"},
		{name: "the deferred body is gone", found: stopped(msg, 1, stepBody, intake.Errorf(intake.ENOTFOUND, "no body")),
			kind: verdictDead, code: intake.ErrCodeBodyExpired, message: "the stored body has expired"},
		{name: "the deferred body cannot be read", found: stopped(msg, 2, stepBody, failing),
			kind: verdictRetry, code: intake.ErrCodeTransient, message: "read the body: connection refused"},
		{name: "the connection was deleted", found: stopped(msg, 1, stepConnection, intake.Errorf(intake.ENOTFOUND, "no connection")),
			kind: verdictDead, code: intake.ErrCodePermanent, message: "the connection was deleted"},
		{name: "the connection cannot be read", found: stopped(msg, 1, stepConnection, failing),
			kind: verdictRetry, code: intake.ErrCodeTransient, message: "load connection: connection refused"},
		{name: "no adapter", found: stopped(msg, 1, stepAdapter, errors.New(`no adapter for provider "gone"`)),
			kind: verdictDead, code: intake.ErrCodePermanent, message: `no adapter for provider "gone"`},
		{name: "a config that does not parse", found: stopped(msg, 1, stepConfig, errors.New("config: bad json")),
			kind: verdictDead, code: intake.ErrCodePermanent, message: "config: bad json"},
		{name: "secrets this process cannot open", found: stopped(msg, 3, stepSecrets, errors.New("open connection secrets: wrong key")),
			kind: verdictRelease, message: "open connection secrets: wrong key"},
		{name: "a request that will never verify", found: stopped(msg, 1, stepVerify, &provider.PermanentError{Err: errors.New("no signing scheme")}),
			kind: verdictDead, code: intake.ErrCodePermanent, message: "no signing scheme"},
		{name: "the provider's keys cannot be read now", found: stopped(msg, 1, stepVerify, &provider.TransientError{Err: errors.New("jwks: 503")}),
			kind: verdictRetry, code: intake.ErrCodeTransient, message: "jwks: 503"},
		{name: "a signature that does not verify", found: stopped(msg, 1, stepVerify, signature),
			kind: verdictSettle, to: intake.MessageIgnored, code: intake.OutcomeSignature, message: "signature: " + signature.Error()},
		{name: "a verification error names no signature value", found: stopped(msg, 1, stepVerify, errors.New("sig=abcdef")),
			kind: verdictSettle, to: intake.MessageIgnored, code: intake.OutcomeSignature, message: "signature: verification failed"},
		{name: "a script naming too many events", found: stopped(msg, 1, stepInterpret, &rules.ScriptError{Reason: rules.ReasonTooManyEvents, Message: "too many"}),
			kind: verdictDead, code: intake.ErrCodeTooManyEvents, message: "too many"},
		{name: "a script that fails", found: stopped(msg, 1, stepInterpret, &rules.ScriptError{Reason: rules.ReasonThrow, Message: "script: boom"}),
			kind: verdictDead, code: intake.ErrCodeScript, message: "script: boom"},
		{name: "a request that will never interpret", found: stopped(msg, 1, stepInterpret, &provider.PermanentError{Err: errors.New("not json")}),
			kind: verdictDead, code: intake.ErrCodePermanent, message: "not json"},
		{name: "an adapter naming too many events", found: stopped(msg, 1, stepInterpret, errTooManyEvents(intake.MaxEventsPerMessage+1)),
			kind: verdictDead, code: intake.ErrCodeTooManyEvents, message: errTooManyEvents(intake.MaxEventsPerMessage + 1).Error()},
		{name: "no script host could start", found: stopped(msg, 1, stepInterpret, context.DeadlineExceeded),
			kind: verdictRetry, code: intake.ErrCodeTransient, message: context.DeadlineExceeded.Error()},
		{name: "the connection's filter could not run: no events written", found: func() found {
			f := stopped(msg, 1, stepFilter, errors.New("envelope does not encode"))
			f.in, f.made, f.events = provider.Interpretation{ProviderEventID: "evt_1"}, 1, []intake.Event{ev}
			return f
		}(), kind: verdictRetry, code: intake.ErrCodeTransient, message: "envelope does not encode"},
		{name: "a challenge", found: done(msg, provider.Interpretation{Challenge: true, ProviderEventID: "ch"}, 0, nil, false),
			kind: verdictSettle, to: intake.MessageProcessed, code: intake.OutcomeChallenge},
		{name: "events", found: done(msg, provider.Interpretation{ProviderEventID: "evt_1"}, 1, []intake.Event{ev}, false),
			kind: verdictSettle, to: intake.MessageProcessed, code: intake.OutcomeEvents, identity: "id:evt_1", events: 1},
		{name: "no id: the body's digest is the identity", found: done(msg, provider.Interpretation{}, 1, []intake.Event{ev}, false),
			kind: verdictSettle, to: intake.MessageProcessed, code: intake.OutcomeEvents, identity: "digest:ep1:d1", events: 1},
		{name: "a change notice without an id is never deduplicated", found: done(msg, provider.Interpretation{Kind: intake.KindChangeNotice}, 1, []intake.Event{ev}, false),
			kind: verdictSettle, to: intake.MessageProcessed, code: intake.OutcomeEvents, events: 1},
		{name: "a replay bypasses deduplication", found: func() found {
			f := done(msg, provider.Interpretation{ProviderEventID: "evt_1"}, 1, []intake.Event{ev}, false)
			f.claim.Message.ReplayOf = "m0"
			return f
		}(), kind: verdictSettle, to: intake.MessageProcessed, code: intake.OutcomeEvents, events: 1},
		{name: "no events", found: done(msg, provider.Interpretation{ProviderEventID: "evt_1"}, 0, nil, false),
			kind: verdictSettle, to: intake.MessageProcessed, code: intake.OutcomeNoEvents, identity: "id:evt_1"},
		{name: "the connection's filter dropped every event", found: done(msg, provider.Interpretation{ProviderEventID: "evt_1"}, 2, nil, true),
			kind: verdictSettle, to: intake.MessageProcessed, code: intake.OutcomeFiltered, identity: "id:evt_1"},
		{name: "the connection's filter kept some", found: done(msg, provider.Interpretation{ProviderEventID: "evt_1"}, 2, []intake.Event{ev}, true),
			kind: verdictSettle, to: intake.MessageProcessed, code: intake.OutcomeEvents, identity: "id:evt_1", events: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.found.retryAt = retryAt
			v := decide(tc.found)
			st := v.st
			if v.kind() != tc.kind {
				t.Fatalf("verdict %s (%+v), want %s", v.kind(), v, tc.kind)
			}
			if st.MessageID != msg.ID || st.Attempt != tc.found.claim.Attempt {
				t.Errorf("settlement of message %q attempt %d, want %q attempt %d", st.MessageID, st.Attempt, msg.ID, tc.found.claim.Attempt)
			}
			switch tc.kind {
			case verdictRelease:
				if v.release != tc.message || st.To != "" {
					t.Errorf("release %q with a settlement to %q, want %q with none", v.release, st.To, tc.message)
				}
				return
			case verdictSettle:
				if st.To != tc.to || st.Outcome != tc.code || st.ErrorMessage != tc.message || st.ErrorCode != "" {
					t.Errorf("settled %s/%s (%q, code %q), want %s/%s (%q)", st.To, st.Outcome, st.ErrorMessage, st.ErrorCode, tc.to, tc.code, tc.message)
				}
			default:
				if st.ErrorCode != tc.code || st.ErrorMessage != tc.message {
					t.Errorf("error %s %q, want %s %q", st.ErrorCode, st.ErrorMessage, tc.code, tc.message)
				}
			}
			if want := (tc.kind == verdictRetry); st.NextAttemptAt.Equal(retryAt) != want {
				t.Errorf("next attempt at %v (retry: %v)", st.NextAttemptAt, want)
			}
			var identity string
			if st.Identity != nil {
				identity = st.Identity.Key
			}
			if identity != tc.identity {
				t.Errorf("identity %q, want %q", identity, tc.identity)
			}
			if len(st.Events) != tc.events {
				t.Errorf("%d events written, want %d", len(st.Events), tc.events)
			}
			if tc.kind != verdictSettle && (st.Outcome != "" || st.ProviderEventID != "" || st.Identity != nil) {
				t.Errorf("a %s carries what only a processed settle writes: %+v", tc.kind, st)
			}
		})
	}
}

func claim(m intake.Message, attempt int, edit func(*intake.Message)) intake.Claim {
	edit(&m)
	return intake.Claim{Message: m, Attempt: attempt}
}

func stopped(m intake.Message, attempt int, at step, err error) found {
	return found{claim: intake.Claim{Message: m, Attempt: attempt}, stopped: at, err: err}
}

func done(m intake.Message, in provider.Interpretation, made int, kept []intake.Event, filtered bool) found {
	return found{claim: intake.Claim{Message: m, Attempt: 1}, in: in, made: made, events: kept, filtered: filtered}
}
