package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/provider"
	"github.com/intakehq/intake/rules"
)

// An attempt is three steps: load reads and verifies (the body, the
// connection, its secrets, the adapter's or script's interpretation, the
// connection's filter), stopping at the first step that fails; decide, a
// pure function, turns what load found into a verdict; process acts on
// it (settles, or releases the message).

// step names the step of an attempt's load that stopped it.
type step int

const (
	stepDone       step = iota // every step ran
	stepObject                 // reading the body from object storage
	stepBody                   // reading a body its claim deferred from the database
	stepConnection             // loading the connection
	stepAdapter                // finding the provider's adapter
	stepConfig                 // parsing the connection's config
	stepSecrets                // opening the connection's secrets
	stepVerify                 // verifying the signature
	stepInterpret              // the adapter's or script's interpretation
	stepFilter                 // the connection's filter
)

// found is what an attempt's load found, for decide.
type found struct {
	claim intake.Claim
	// retryAt is when the next attempt would be due, were this one to
	// fail transiently (the backoff's jitter drawn before decide, which is
	// a function of what it is given).
	retryAt time.Time
	// stopped is the step that stopped the load, and err why (stepDone:
	// none did).
	stopped step
	err     error
	// in is the interpretation of a verified request.
	in provider.Interpretation
	// made is how many events the interpretation made, and events those
	// the connection's filter kept (filtered: it ran on them).
	made     int
	events   []intake.Event
	filtered bool
}

// verdict is what an attempt comes to: a settlement to write, or, when
// release is set, none: the message is handed back unsettled, its attempt
// not spent, for the reason release gives (this process's master key
// cannot open the connection's secrets, releaseUnopenable).
type verdict struct {
	st      intake.Settlement
	release string
}

// verdictKind names a verdict, for tests and traces.
type verdictKind string

const (
	verdictSettle  verdictKind = "settle"  // processed or ignored
	verdictRetry   verdictKind = "retry"   // failed, the next attempt scheduled
	verdictDead    verdictKind = "dead"    // no attempt will succeed
	verdictRelease verdictKind = "release" // handed back, unsettled
)

func (v verdict) kind() verdictKind {
	switch {
	case v.release != "":
		return verdictRelease
	case v.st.To == intake.MessageDead:
		return verdictDead
	case v.st.To == intake.MessageFailed:
		return verdictRetry
	}
	return verdictSettle
}

// errTooManyEvents stops an interpretation that named more events than a
// message may make.
type errTooManyEvents int

func (n errTooManyEvents) Error() string {
	return fmt.Sprintf("the provider named %d events, at most %d", int(n), intake.MaxEventsPerMessage)
}

// decide turns what an attempt's load found into its verdict.
func decide(f found) verdict {
	m := &f.claim.Message
	st := intake.Settlement{MessageID: m.ID, Attempt: f.claim.Attempt}
	if f.claim.Attempt > m.MaxAttempts {
		// The last attempt's lease ran out without a result.
		return dead(st, intake.ErrCodeLeaseExpired, "the last attempt did not finish before its lease expired")
	}
	if m.BodyExpired {
		return dead(st, intake.ErrCodeBodyExpired, "the stored body has expired")
	}
	retry := func(err error) verdict { return verdict{st: retryLater(st, m.MaxAttempts, f.retryAt, err)} }
	gone := intake.ErrorCode(f.err) == intake.ENOTFOUND
	var perm *provider.PermanentError
	var unsure *provider.TransientError
	var se *rules.ScriptError
	var tooMany errTooManyEvents
	switch f.stopped {
	case stepObject:
		if gone {
			return dead(st, intake.ErrCodeBodyExpired, "the body's object is gone from object storage")
		}
		return retry(fmt.Errorf("read the body from object storage: %w", f.err))
	case stepBody:
		if gone {
			return dead(st, intake.ErrCodeBodyExpired, "the stored body has expired")
		}
		return retry(fmt.Errorf("read the body: %w", f.err))
	case stepConnection:
		if gone {
			return dead(st, intake.ErrCodePermanent, "the connection was deleted")
		}
		return retry(fmt.Errorf("load connection: %w", f.err))
	case stepAdapter, stepConfig:
		return dead(st, intake.ErrCodePermanent, f.err.Error())
	case stepSecrets:
		return verdict{st: st, release: f.err.Error()}
	case stepVerify:
		switch {
		case errors.As(f.err, &perm):
			return dead(st, intake.ErrCodePermanent, f.err.Error())
		case errors.As(f.err, &unsure):
			// The provider's keys could not be read now: tried again later.
			return retry(f.err)
		}
		st.To, st.Outcome = intake.MessageIgnored, intake.OutcomeSignature
		st.ErrorMessage = "signature: " + verifyReason(f.err)
		return verdict{st: st}
	case stepInterpret:
		switch {
		case errors.As(f.err, &se) && se.Reason == rules.ReasonTooManyEvents:
			return dead(st, intake.ErrCodeTooManyEvents, se.Message)
		case errors.As(f.err, &se):
			return dead(st, intake.ErrCodeScript, se.Message) // reads "script: body too large"
		case errors.As(f.err, &perm):
			return dead(st, intake.ErrCodePermanent, f.err.Error())
		case errors.As(f.err, &tooMany):
			return dead(st, intake.ErrCodeTooManyEvents, f.err.Error())
		}
		return retry(f.err) // the caller left, or no script host could start
	case stepFilter:
		return retry(f.err)
	}
	st.To, st.ProviderEventID = intake.MessageProcessed, f.in.ProviderEventID
	if f.in.Challenge {
		st.Outcome = intake.OutcomeChallenge
		return verdict{st: st}
	}
	if m.ReplayOf == "" {
		if id, ok := intake.IdentityFor(m, f.in.ProviderEventID, f.in.EventType, f.in.Kind); ok {
			st.Identity = &id
		}
	}
	st.Events = f.events
	switch {
	case f.made == 0:
		st.Outcome = intake.OutcomeNoEvents
	case f.filtered && len(f.events) == 0:
		st.Outcome = intake.OutcomeFiltered
	default:
		st.Outcome = intake.OutcomeEvents
	}
	return verdict{st: st}
}

// retryLater schedules the next attempt at at, or ends the message dead
// when its max attempts are spent.
func retryLater(st intake.Settlement, maxAttempts int, at time.Time, err error) intake.Settlement {
	if st.Attempt >= maxAttempts {
		return deadSettlement(st, intake.ErrCodeTransient, err.Error())
	}
	st.To, st.ErrorCode, st.ErrorMessage = intake.MessageFailed, intake.ErrCodeTransient, err.Error()
	st.NextAttemptAt = at
	return st
}

func dead(st intake.Settlement, code, msg string) verdict {
	return verdict{st: deadSettlement(st, code, msg)}
}

func deadSettlement(st intake.Settlement, code, msg string) intake.Settlement {
	st.To, st.ErrorCode, st.ErrorMessage = intake.MessageDead, code, msg
	return st
}

// verifyReason keeps the adapter's reason (missing header, stale timestamp,
// no secret matched) without ever carrying a signature value.
func verifyReason(err error) string {
	if errors.Is(err, provider.ErrSignature) {
		return err.Error()
	}
	return "verification failed"
}
