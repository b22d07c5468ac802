package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

// A call's result is settled in a transaction of its own, or with the
// results of the calls that finished while the previous settle was
// committing: the settlers take what waits, up to routeSettleBatch, and
// settle it together. Each result is applied alone (ApplyRouteSettlement,
// one after the other, each seeing what those before it changed), but
// they share the reads that lock their rows and the statements that write
// them, so a batch costs the statements of one settle whatever it holds.
// A stale result writes nothing and fails alone; one that would move a
// lane read unlocked settles again, with the others that would, under the
// lanes' locks.

type routeSettleRequest struct {
	now  time.Time
	st   intake.RouteSettlement
	b    intake.Backoff
	done chan error
}

const (
	// routeSettlers is how many batches of call settles may commit at once.
	routeSettlers = 2
	// routeSettleBatch is the most call settles one transaction takes.
	routeSettleBatch = 64
)

// SettleRoute applies one call's result to its route, lane and event in
// one transaction, which it may share with the results of other calls.
func (s *Store) SettleRoute(ctx context.Context, now time.Time, st intake.RouteSettlement, b intake.Backoff) error {
	if !validIDs(st.EventID, st.ConsumerID) {
		return notFound("route", st.EventID+"/"+st.ConsumerID)
	}
	req := routeSettleRequest{now: now, st: st, b: b, done: make(chan error, 1)}
	if err := s.routeSettles.put(ctx, s.stop, req); err != nil {
		return err
	}
	// A caller that stops waiting learns nothing of the outcome; the route
	// is settled or its lease expires, as when a commit's answer is lost.
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		s.failQueued()
		return <-req.done
	}
}

// settleRoutes settles a batch and answers each request. The lanes are
// read unlocked first: calls that leave them as they were (successes on a
// closed breaker) then take no lock that every other call to the consumer
// would queue behind. The results that would move a lane settle again,
// together, with their lanes locked. If the batch's transaction fails,
// each result is settled alone, so that none fails its neighbours.
func (s *Store) settleRoutes(batch []routeSettleRequest) {
	ctx := context.Background()
	errs, err := s.settleRouteBatch(ctx, batch, false)
	if err != nil && len(batch) > 1 {
		for _, r := range batch {
			s.settleRoutes([]routeSettleRequest{r})
		}
		return
	}
	var again []routeSettleRequest
	for i, r := range batch {
		switch {
		case err != nil:
			r.done <- err
		case errors.Is(errs[i], errLaneMoved):
			again = append(again, r)
		default:
			r.done <- errs[i]
		}
	}
	if len(again) == 0 {
		return
	}
	errs, err = s.settleRouteBatch(ctx, again, true)
	for i, r := range again {
		if err == nil {
			err = errs[i]
		}
		r.done <- err
	}
}

// errLaneMoved refuses a result that would move a lane read unlocked.
var errLaneMoved = errors.New("the lane moves: settle again with it locked")

// settleRouteBatch applies each request's result in one transaction of
// two round trips and returns each one's error; err is the transaction's.
func (s *Store) settleRouteBatch(ctx context.Context, batch []routeSettleRequest, lockLanes bool) (errs []error, err error) {
	var w *routeBatch
	err = s.pipeline(ctx, func(p *pipeTx) error {
		w = newRouteBatch(batch, lockLanes)
		forCustomPlans(p.b)
		w.read(p.b)
		if err := p.flush(ctx); err != nil {
			return err
		}
		errs = make([]error, len(batch))
		for i, r := range batch {
			t := w.tx(r.st)
			if errs[i] = intake.ApplyRouteSettlement(ctx, t, r.now, r.st, r.b); errs[i] == nil {
				w.keep(t)
			}
		}
		w.write(p, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.hub.Notify(intake.TopicRoutes)
	return errs, nil
}

type routeKey struct{ event, consumer string }

type readRoute struct {
	route  intake.Route
	leased bool
}

type readLane struct {
	controls intake.Controls
	lane     intake.Lane
	// tripped is how the breaker stood when it was read.
	tripped bool
}

// routeBatch is what a batch read under its locks, moved by the results
// applied so far, and what it will write at the commit.
type routeBatch struct {
	lockLanes bool
	eventIDs  []string
	routeKeys []routeKey
	consumers []string

	events map[string]intake.EventState
	routes map[routeKey]readRoute
	lanes  map[string]readLane
	counts map[string]intake.RouteCounts

	deliveries  deliveryColumns
	savedRoutes []routeKey
	savedStates []string
	savedLanes  []string
	// later are the rarer writes (audit, notices, a disabled consumer),
	// queued in order at the commit.
	later   []func(b *pgx.Batch)
	changed bool
	notify  bool
}

func newRouteBatch(batch []routeSettleRequest, lockLanes bool) *routeBatch {
	w := &routeBatch{lockLanes: lockLanes, events: map[string]intake.EventState{}, routes: map[routeKey]readRoute{},
		lanes: map[string]readLane{}, counts: map[string]intake.RouteCounts{}}
	seenEvent, seenRoute, seenConsumer := map[string]bool{}, map[routeKey]bool{}, map[string]bool{}
	for _, r := range batch {
		k := routeKey{r.st.EventID, r.st.ConsumerID}
		if !seenEvent[k.event] {
			seenEvent[k.event] = true
			w.eventIDs = append(w.eventIDs, k.event)
		}
		if !seenRoute[k] {
			seenRoute[k] = true
			w.routeKeys = append(w.routeKeys, k)
		}
		if !seenConsumer[k.consumer] {
			seenConsumer[k.consumer] = true
			w.consumers = append(w.consumers, k.consumer)
		}
	}
	return w
}

// read queues the reads: the events and then the routes locked, each in
// the order of its key so that concurrent batches take them in one order;
// the consumers with their lanes (locked only with lockLanes); the
// events' route counts.
func (w *routeBatch) read(b *pgx.Batch) {
	b.Queue(`SELECT id::text, state FROM events WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`, w.eventIDs).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id string
			var st intake.EventState
			if err := rows.Scan(&id, &st); err != nil {
				return err
			}
			w.events[id] = st
		}
		return rows.Err()
	})
	events, consumers := make([]string, len(w.routeKeys)), make([]string, len(w.routeKeys))
	for i, k := range w.routeKeys {
		events[i], consumers[i] = k.event, k.consumer
	}
	b.Queue(`SELECT r.event_id::text, r.consumer_id::text, r.org_id::text, r.state, r.attempt, r.next_at, r.order_key, r.order_at,
		       r.last_error, r.lease_until IS NOT NULL
		  FROM unnest($1::uuid[], $2::uuid[]) AS k (event_id, consumer_id)
		  JOIN routes r ON r.event_id = k.event_id AND r.consumer_id = k.consumer_id
		 ORDER BY r.event_id, r.consumer_id FOR UPDATE OF r`, events, consumers).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var x readRoute
			r := &x.route
			var next, orderAt *time.Time
			if err := rows.Scan(&r.EventID, &r.ConsumerID, &r.OrgID, &r.State, &r.Attempt, &next, &r.OrderKey, &orderAt, &r.LastError, &x.leased); err != nil {
				return err
			}
			r.NextAt, r.OrderAt = fromTS(next), fromTS(orderAt)
			w.routes[routeKey{r.EventID, r.ConsumerID}] = x
		}
		return rows.Err()
	})
	lock := ""
	if w.lockLanes {
		lock = " FOR UPDATE OF l"
	}
	b.Queue(`SELECT `+prefixed("c.", controlColumns)+`, `+laneColumns+`
		FROM consumers c JOIN consumer_lanes l ON l.consumer_id = c.id WHERE c.id = ANY($1::uuid[]) AND c.deleted_at IS NULL
		ORDER BY c.id`+lock, w.consumers).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var x readLane
			controls, doneC := controlDests(&x.controls)
			lane, doneL := laneDests(&x.lane)
			if err := rows.Scan(append(controls, lane...)...); err != nil {
				return err
			}
			doneC()
			doneL()
			x.tripped = x.lane.Tripped
			w.lanes[x.lane.ConsumerID] = x
		}
		return rows.Err()
	})
	b.Queue(`SELECT event_id::text, count(*), count(*) FILTER (WHERE state = 'waiting'),
		count(*) FILTER (WHERE state = 'waiting' AND last_error <> ''), count(*) FILTER (WHERE state = 'filtered'),
		count(*) FILTER (WHERE state = 'dead'), count(*) FILTER (WHERE state = 'dropped')
		FROM routes WHERE event_id = ANY($1::uuid[]) GROUP BY event_id`, w.eventIDs).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id string
			var n intake.RouteCounts
			if err := rows.Scan(&id, &n.Total, &n.Waiting, &n.Failed, &n.Filtered, &n.Dead, &n.Dropped); err != nil {
				return err
			}
			w.counts[id] = n
		}
		return rows.Err()
	})
}

// tx is the view of one result: what the batch holds now for its event,
// route and lane, changed only by its own writes until keep takes them.
func (w *routeBatch) tx(st intake.RouteSettlement) *routeTx {
	t := &routeTx{w: w, key: routeKey{st.EventID, st.ConsumerID}}
	t.event, t.eventFound = w.events[st.EventID]
	t.route, t.routeFound = w.routes[t.key]
	t.lane, t.laneFound = w.lanes[st.ConsumerID]
	t.counts = w.counts[st.EventID]
	return t
}

// keep makes a result that applied part of the batch: its writes go to
// the commit, and the results after it see what it changed.
func (w *routeBatch) keep(t *routeTx) {
	if t.delivery != nil {
		w.deliveries.add(*t.delivery)
	}
	if t.saved != nil {
		w.savedRoutes = appendOnce(w.savedRoutes, t.key)
		w.routes[t.key] = readRoute{route: *t.saved}
		w.counts[t.key.event] = t.counts
	}
	if t.state != "" {
		w.savedStates = appendOnce(w.savedStates, t.key.event)
		w.events[t.key.event] = t.state
	}
	if t.savedLane != nil {
		w.savedLanes = appendOnce(w.savedLanes, t.key.consumer)
		l := w.lanes[t.key.consumer]
		l.lane = *t.savedLane
		w.lanes[t.key.consumer] = l
	}
	w.later = append(w.later, t.later...)
	w.changed = w.changed || t.changed
	// A released lease may let another call go at once: a freed
	// max_in_flight slot or the next route of an ordering key. Other
	// processes hear of it only then.
	w.notify = w.notify || t.lane.controls.MaxInFlight > 0 || t.lane.controls.Ordering != ""
}

// appendOnce is s with v at its end, unless s holds it already.
func appendOnce[T comparable](s []T, v T) []T {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// write queues what the kept results write, a statement for each kind of
// row whatever the batch holds.
func (w *routeBatch) write(p *pipeTx, s *Store) {
	b := p.b
	if len(w.deliveries.ids) > 0 {
		b.Queue(`INSERT INTO deliveries (id, org_id, event_id, consumer_id, attempt, outcome, status_code, latency_us, error, at)
			SELECT `+deliveryUnnestColumns+` FROM `+deliveryUnnest(1), w.deliveries.args()...)
	}
	if n := len(w.savedRoutes); n > 0 {
		events, consumers, states, lastErrors := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		attempts, nexts := make([]int32, n), make([]*time.Time, n)
		for i, k := range w.savedRoutes {
			r := w.routes[k].route
			events[i], consumers[i], states[i], lastErrors[i] = k.event, k.consumer, string(r.State), text(r.LastError)
			attempts[i], nexts[i] = int32(r.Attempt), tsPtr(r.NextAt)
		}
		b.Queue(`UPDATE routes r SET state = x.state, attempt = x.attempt, next_at = x.next_at, last_error = x.last_error, lease_until = NULL
			FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::timestamptz[], $6::text[])
			  AS x (event_id, consumer_id, state, attempt, next_at, last_error)
			WHERE r.event_id = x.event_id AND r.consumer_id = x.consumer_id`, events, consumers, states, attempts, nexts, lastErrors)
	}
	for _, id := range w.savedLanes {
		x := w.lanes[id]
		l := x.lane
		b.Queue(`UPDATE consumer_lanes SET tokens = $2, refilled_at = $3, failures = $4, failing_since = $5, tripped = $6, probe_at = $7,
			probe_every_ms = $8 WHERE consumer_id = $1`,
			l.ConsumerID, l.Tokens, ts(l.RefilledAt), l.Failures, ts(l.FailingSince), l.Tripped, ts(l.ProbeAt), l.ProbeEvery.Milliseconds())
		// A breaker that closed lets its consumer's calls go again.
		w.notify = w.notify || (x.tripped && !l.Tripped)
	}
	if n := len(w.savedStates); n > 0 {
		states := make([]string, n)
		for i, id := range w.savedStates {
			states[i] = string(w.events[id])
		}
		// Each event's attempt shows the most any of its routes spent.
		b.Queue(`UPDATE events e SET state = x.state, attempt = coalesce((SELECT max(r.attempt) FROM routes r WHERE r.event_id = e.id), e.attempt)
			FROM unnest($1::uuid[], $2::text[]) AS x (id, state) WHERE e.id = x.id`, w.savedStates, states)
	}
	for _, f := range w.later {
		f(b)
	}
	if w.changed {
		b.Queue(`SELECT pg_notify($1, $2)`, changesChannel, s.instance)
		p.changed = true
	}
	if w.notify {
		b.Queue(`SELECT pg_notify($1, $2)`, channels[intake.TopicRoutes], s.instance)
	}
}

// routeTx is ApplyRouteSettlement's view of one result in a batch.
type routeTx struct {
	w   *routeBatch
	key routeKey

	event      intake.EventState
	eventFound bool
	route      readRoute
	routeFound bool
	lane       readLane
	laneFound  bool
	counts     intake.RouteCounts

	delivery  *intake.Delivery
	saved     *intake.Route
	state     intake.EventState
	savedLane *intake.Lane
	later     []func(b *pgx.Batch)
	changed   bool
}

var _ intake.RouteSettleTx = (*routeTx)(nil)

func (t *routeTx) LockEvent(_ context.Context, eventID string) (intake.EventState, error) {
	if eventID != t.key.event || !t.eventFound {
		return "", notFound("event", eventID)
	}
	return t.event, nil
}

func (t *routeTx) LockRoute(_ context.Context, eventID, consumerID string) (intake.Route, bool, error) {
	if (routeKey{eventID, consumerID}) != t.key || !t.routeFound {
		return intake.Route{}, false, notFound("route", eventID+"/"+consumerID)
	}
	return t.route.route, t.route.leased, nil
}

func (t *routeTx) LockLane(_ context.Context, consumerID string) (intake.Controls, intake.Lane, error) {
	if consumerID != t.key.consumer || !t.laneFound {
		return intake.Controls{}, intake.Lane{}, notFound("consumer", consumerID)
	}
	return t.lane.controls, t.lane.lane, nil
}

func (t *routeTx) SaveLane(_ context.Context, l intake.Lane) error {
	if !t.w.lockLanes {
		return errLaneMoved
	}
	t.savedLane = &l
	return nil
}

func (t *routeTx) SaveRoute(_ context.Context, r intake.Route) error {
	// The counts read under the event's lock, moved by this route's change.
	t.counts = moveCounts(t.counts, t.route.route, r)
	t.saved = &r
	return nil
}

// moveCounts is n with one route changed from was to now.
func moveCounts(n intake.RouteCounts, was, now intake.Route) intake.RouteCounts {
	add := func(r intake.Route, d int) {
		switch r.State {
		case intake.RouteWaiting:
			n.Waiting += d
			if r.LastError != "" {
				n.Failed += d
			}
		case intake.RouteFiltered:
			n.Filtered += d
		case intake.RouteDead:
			n.Dead += d
		case intake.RouteDropped:
			n.Dropped += d
		}
	}
	add(was, -1)
	add(now, 1)
	return n
}

func (t *routeTx) InsertDelivery(_ context.Context, d intake.Delivery) error {
	t.delivery = &d
	return nil
}

func (t *routeTx) DisableConsumer(_ context.Context, id string, a intake.AuditEntry) error {
	if !validIDs(id) {
		return nil
	}
	t.later = append(t.later, func(b *pgx.Batch) {
		b.Queue(`WITH d AS (UPDATE consumers SET enabled = false WHERE id = $1 AND enabled AND deleted_at IS NULL RETURNING org_id)
			INSERT INTO audit_log (id, org_id, actor, action, target_type, target_id, detail, at)
			SELECT $2, org_id, $3, $4, $5, $6, $7, $8 FROM d`,
			id, a.ID, text(a.Actor), text(a.Action), text(a.TargetType), text(a.TargetID), text(a.Detail), ts(a.At))
	})
	t.changed = true
	return nil
}

func (t *routeTx) InsertAudit(_ context.Context, a intake.AuditEntry) error {
	t.later = append(t.later, func(b *pgx.Batch) {
		b.Queue(`INSERT INTO audit_log (id, org_id, actor, action, target_type, target_id, detail, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			a.ID, nullID(a.OrgID), text(a.Actor), text(a.Action), text(a.TargetType), text(a.TargetID), text(a.Detail), ts(a.At))
	})
	return nil
}

func (t *routeTx) InsertNotice(_ context.Context, n intake.Notice) error {
	t.later = append(t.later, func(b *pgx.Batch) { queueNotice(b, n) })
	return nil
}

func queueNotice(b *pgx.Batch, n intake.Notice) {
	b.Queue(`INSERT INTO notices (id, org_id, topic, subject, detail, at) VALUES ($1, $2, $3, $4, $5, $6)`,
		n.ID, n.OrgID, text(n.Topic), text(n.Subject), text(n.Detail), ts(n.At))
}

func (t *routeTx) CountRoutes(_ context.Context, eventID string) (intake.RouteCounts, error) {
	if eventID != t.key.event {
		return intake.RouteCounts{}, notFound("event", eventID)
	}
	return t.counts, nil
}

func (t *routeTx) SetEventState(_ context.Context, eventID string, to intake.EventState, _ time.Time) error {
	if eventID != t.key.event {
		return notFound("event", eventID)
	}
	t.state = to
	return nil
}
