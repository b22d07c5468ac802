package control

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/fair"
)

// ReadBudget bounds operators' reads (lists, searches, counts, exports,
// the overview), so that no key, even a viewer's, can take the store from
// the pipeline or from another org (DESIGN §26).
type ReadBudget struct {
	// Deadline is how long one read may run (default 5s): PostgreSQL's
	// statement_timeout on its read pool, an interrupt on SQLite.
	Deadline time.Duration
	// PerOrg is how many reads one org runs at once (default 2); Total
	// how many all orgs run at once (default 4, the size of the stores'
	// operator read pools), each org at most its fair share of them. A
	// read past them waits up to Wait (default 1s), then is refused with
	// EBUSY and a Retry-After.
	PerOrg int
	Total  int
	Wait   time.Duration
}

// DefaultReadBudget is the bound serve starts with unless told otherwise.
var DefaultReadBudget = ReadBudget{Deadline: 5 * time.Second, PerOrg: 2, Total: 4, Wait: time.Second}

// CallBounds bound the operator actions that call out or hold a
// connection (DESIGN §26): a consumer test makes a call to the consumer's
// destination, a raw body read is held until its body has been sent. Zero
// fields take DefaultCallBounds'.
type CallBounds struct {
	// TestsPerOrg consumer tests run at once per org, Tests in all;
	// TestsPerSecond a second per org, TestsBurst at once.
	TestsPerOrg, Tests int
	TestsPerSecond     float64
	TestsBurst         int
	// BodyReadsPerOrg raw bodies are read at once per org (a slow download
	// holds its slot), BodyReads in all.
	BodyReadsPerOrg, BodyReads int
}

// DefaultCallBounds are the bounds serve starts with unless told otherwise.
var DefaultCallBounds = CallBounds{TestsPerOrg: 4, Tests: 32, TestsPerSecond: 2, TestsBurst: 20, BodyReadsPerOrg: 2, BodyReads: 16}

// DefaultBulkMax is the most rows a bulk replay or re-route takes at
// once (--bulk-max).
const DefaultBulkMax = 10_000

// budgets are the plane's bounds on what callers drive.
type budgets struct {
	deadline time.Duration
	reads    *fair.Budget
	bodies   *fair.Budget
	// tests bounds consumer tests at once, testRate a second; bulk
	// bounds bulk actions at once, one an org; bulkMax their rows.
	tests    *fair.Budget
	testRate *fair.Rates
	bulk     *fair.Budget
	bulkMax  int
}

func newBudgets(r ReadBudget, c CallBounds, bulkMax int) budgets {
	b := DefaultCallBounds
	b.TestsPerOrg = cmp.Or(c.TestsPerOrg, b.TestsPerOrg)
	b.Tests = cmp.Or(c.Tests, b.Tests)
	b.TestsPerSecond = cmp.Or(c.TestsPerSecond, b.TestsPerSecond)
	b.TestsBurst = cmp.Or(c.TestsBurst, b.TestsBurst)
	b.BodyReadsPerOrg = cmp.Or(c.BodyReadsPerOrg, b.BodyReadsPerOrg)
	b.BodyReads = cmp.Or(c.BodyReads, b.BodyReads)
	d := DefaultReadBudget
	if r.Deadline > 0 {
		d.Deadline = r.Deadline
	}
	if r.PerOrg > 0 {
		d.PerOrg = r.PerOrg
	}
	if r.Total > 0 {
		d.Total = r.Total
	}
	if r.Wait > 0 {
		d.Wait = r.Wait
	}
	return budgets{deadline: d.Deadline,
		reads:    &fair.Budget{What: "reads", PerOrg: int64(d.PerOrg), Total: int64(d.Total), Wait: d.Wait},
		bodies:   &fair.Budget{What: "body reads", PerOrg: int64(b.BodyReadsPerOrg), Total: int64(b.BodyReads), Wait: d.Wait},
		tests:    &fair.Budget{What: "consumer tests", PerOrg: int64(b.TestsPerOrg), Total: int64(b.Tests), Wait: time.Second},
		testRate: &fair.Rates{What: "consumer tests", Every: b.TestsPerSecond, Burst: b.TestsBurst},
		bulk:     &fair.Budget{What: "bulk actions", PerOrg: 1},
		bulkMax:  cmp.Or(bulkMax, DefaultBulkMax)}
}

// BulkMax is the most rows a bulk replay or re-route takes at once: past
// it one runs only when confirmed, as a job.
func (p *Plane) BulkMax() int { return p.budgets.bulkMax }

// takeTest admits one consumer test of c's now, within its org's rate and
// share of the tests at once.
func (p *Plane) takeTest(ctx context.Context, c Caller) (release func(), err error) {
	if err := p.budgets.testRate.Allow(budgetKey(c), p.now()); err != nil {
		return nil, busyError(err)
	}
	release, err = p.budgets.tests.Take(ctx, budgetKey(c), 1)
	return release, busyError(err)
}

// takeBulk admits one bulk action of c's now: one at a time per org.
func (p *Plane) takeBulk(ctx context.Context, c Caller) (release func(), err error) {
	release, err = p.budgets.bulk.Take(ctx, budgetKey(c), 1)
	return release, busyError(err)
}

// budgetKey is whose budget c spends: its org's, or staff's own.
func budgetKey(c Caller) string {
	if c.Staff() {
		return "staff"
	}
	return c.Scope.OrgID
}

// budgeted runs read as c's operator read: within c's org's share of the
// read budget, marked for the store's read connections, and within the
// read deadline. A read past its deadline fails with EUNAVAILABLE naming
// the deadline, and holds nothing afterwards.
func budgeted[T any](ctx context.Context, p *Plane, c Caller, read func(context.Context) (T, error)) (T, error) {
	var zero T
	release, err := p.budgets.reads.Take(ctx, budgetKey(c), 1)
	if err != nil {
		return zero, busyError(err)
	}
	defer release()
	rctx, cancel := context.WithTimeout(intake.OperatorRead(ctx), p.budgets.deadline)
	defer cancel()
	v, err := read(rctx)
	if err != nil && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return zero, &intake.Error{Code: intake.EUNAVAILABLE, RetryAfter: 5 * time.Second, Err: err,
			Message: fmt.Sprintf("this read ran past its %s deadline and was stopped; narrow it (a type, a time window, a more selective match)", p.budgets.deadline)}
	}
	return v, err
}

// busyError turns a budget's refusal into EBUSY with its Retry-After.
func busyError(err error) error {
	if err == nil {
		return nil
	}
	var busy *fair.Busy
	if !errors.As(err, &busy) {
		return err
	}
	return &intake.Error{Code: intake.EBUSY, RetryAfter: busy.RetryAfter, Err: err,
		Message: fmt.Sprintf("this org is at its budget of %s; try again in %s", busy.What, busy.RetryAfter.Round(time.Second))}
}
