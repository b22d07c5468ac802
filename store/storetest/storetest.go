// Package storetest is the conformance suite every intake.Store must pass.
// Each store's tests call Run with a function that opens a fresh, empty
// store.
package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Opener opens a fresh, empty store for one test.
type Opener func(t *testing.T) intake.Store

// Run runs the whole suite.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(*testing.T, intake.Store)
	}{
		{"IngestKeepsRequestAsReceived", testIngestKeepsRequest},
		{"ConcurrentIngestsAllCommit", testConcurrentIngests},
		{"ABadIngestFailsAloneInItsBatch", testBadIngestFailsAlone},
		{"ClaimTakesDueMessagesAsNumberedAttempts", testClaimNumbersAttempts},
		{"ExpiredLeaseIsTakenOverAndStaleAttemptCannotSettle", testLeaseTakeover},
		{"RacingClaimersClaimEachMessageOnce", testRacingClaimers},
		{"AClaimSkipsTheOrgsItIsToldTo", testClaimSkipsOrgs},
		{"SettleCommitsEventsWithProcessedState", testSettleCommitsEvents},
		{"ManyEventsInOneSettleAreKeptFieldForField", testManyEventsInOneSettle},
		{"RepeatedIdentityIsDuplicateAndChangedContentIsConflict", testDedupe},
		{"DigestIdentityExpiresAfterADay", testDigestExpiry},
		{"BatchItemBecomesOneEventAcrossMessages", testBatchItemUnique},
		{"FailedMessageWaitsUntilDue", testFailedWaits},
		{"InvalidTransitionIsRefusedAndChangesNothing", testInvalidTransition},
		{"ForbiddenTransitionsAreRefusedAndChangeNothing", testForbiddenTransitions},
		{"ReleasedLeaseIsClaimableAtOnceAsTheSameAttempt", testRelease},
		{"OrgScopeHidesOtherOrgsRows", testScope},
		{"EveryScopedReadHidesAnotherOrgsRows", testEveryScopedReadHidesAnotherOrgsRows},
		{"ListsPaginateNewestFirst", testPagination},
		{"EndpointUpdatesAndTokenLookup", testEndpoints},
		{"EndpointNameIsKeptAndRenamed", testEndpointName},
		{"EndpointRotationKeepsTheReplacedTokenAndDropsTheOldest", testEndpointRotation},
		{"AKeysNameIsStoredAndListed", testKeyNames},
		{"EventClaimsAreNumberedAndLeased", testEventClaims},
		{"ExpiredEventLeaseIsTakenOverAsRetrying", testEventLeaseTakeover},
		{"ConsumersAreScopedAndCanBeDisabled", testConsumers},
		{"SubjectLinkNamesTheRecordOfLaterEvents", testSubjectLinks},
		{"AuditLogIsScopedAndNewestFirst", testAudit},
		{"RevokedKeyStopsAtOnceKeysAreScopedAndKeepTheirRole", testAPIKeys},
		{"DeletedRowsAreIgnoredByEveryRead", testSoftDelete},
		{"EachOrgKeepsItsOwnRetention", testOrgRetention},
		{"AClaimDefersABodyLargerThanItReads", testClaimDefersLargeBodies},
		{"ListsFilterByProviderEventAndByConsumer", testFilters},
		{"ErasedBodiesAreGoneButTheirIdentitiesStay", testEraseBodies},
		{"ReplayJobsAreScopedLeasedAndTakenOverWhenTheLeaseEnds", testReplayJobs},
		{"BulkJobsWriteEachBatchWithTheirProgressWhileHeldAndTakeTurns", testBulkJobs},
		{"JobsTakeTurnsOrgByOrg", testJobsTakeTurnsOrgByOrg},
		{"OperatorChangesMoveTheChangeCounterBeforeReturning", testChanges},
		{"TheFirstKeyFingerprintRecordedIsKept", testKeyFingerprint},
		{"AMessageReleasedUntilLaterIsClaimedThenAsTheSameAttempt", testReleaseUntilLater},
		{"AuditEntryCommitsWithItsActionOrNeither", testAuditCommitsWithItsAction},
		{"ReplayIsQueuedOrDeadWithAnExpiredBody", testReplayRecords},
		{"RulesReadTheRequestsOfManyMessagesAtOnce", testMessageRequests},
		{"TraceContextSurvivesTheStore", testTraceParent},
		{"ConsoleSessionsExpireRevokeWithTheirKeyAndAreSwept", testSessions},
		{"PeoplesSessionsNeedNoKeyKeepTheirRoleAndEndWithTheirOrg", testPeopleSessions},
		{"OverviewCountsEachHourByStateAndTheOpenWorkExactly", testOverview},
		{"FanOutMovesTheEventByItsRoutes", testFanOutMovesTheEvent},
		{"FanOutHandsOverRoutesOfUnpacedConsumersWithAClosedBreaker", testHandover},
		{"PausedConsumersRoutesWaitUntilResumed", testPause},
		{"MaxInFlightHoldsAcrossClaims", testMaxInFlight},
		{"ClaimsTakeNoMoreThanTheCallersShares", testClaimShares},
		{"AnUnleasedRouteWaitsForAClaim", testUnleasedRoute},
		{"RateHoldsAcrossClaims", testRate},
		{"ASettleWritesTheFanOutItIsGivenWithItsEvents", testSettleFanOut},
		{"UpdatesAreWrittenOverTheVersionRead", testUpdatesAreWrittenOverTheVersionRead},
		{"OrgsAreRenamedOverTheVersionRead", testOrgsAreRenamedOverTheVersionRead},
		{"ADeletedOrgIsGoneFromEveryRead", testADeletedOrgIsGoneFromEveryRead},
		{"OrderedRoutesWaitForTheirPredecessors", testOrdering},
		{"OrderedRoutesWaitForEarlierWebhooksNotYetFannedOut", testOrderingWaitsForEarlierWebhooks},
		{"DisabledAndDeletedConsumersRoutesAreClaimedAndDropped", testDisabledConsumerRoutesAreDropped},
		{"FailedCallsRetryByTheConsumersOwnSchedule", testRetry},
		{"TheEventFollowsItsRoutes", testEventFollowsItsRoutes},
		{"TheBreakerTripsProbesAndRecovers", testBreaker},
		{"AConsumerFailingForItsPeriodIsDisabled", testAutoDisable},
		{"AGoneConsumerIsDisabledAndItsRoutesDropped", testGone},
		{"OnlyTheCurrentCallSettlesOnce", testStaleRouteSettle},
		{"ACallWhoseLeaseRanOutCountsAsFailed", testALapsedCallCountsAsFailed},
		{"AReleasedCallIsClaimedAgainAsTheSameAttempt", testReleasedRouteIsClaimedAgainAsTheSameAttempt},
		{"StatsFindTheOldestDueRoute", testStatsFindTheOldestDueRoute},
		{"RerouteKeepsHandledRoutes", testRerouteKeepsHandledRoutes},
		{"AnEventsRoutesAreReadWithTheirAttemptsAndErrors", testEventRoutes},
		{"ADeliveryKeepsItsAnswerAndTheAttemptsInForceThen", testDeliveryAnswers},
		{"ControlsRoundTrip", testControlsRoundTrip},
		{"ConsumerHealthFigures", testConsumerHealth},
		{"HealthCountsRetriesAndFilterErrors", testHealthCountsRetriesAndFilterErrors},
		{"AHandedOverMessageCommitsUnderItsFirstLeaseAndIsClaimedOnceItExpires", testMessageHandover},
		{"HandedOverAndQueuedMessagesShareCommits", testHandoverSharesCommitsWithQueued},
		{"IngestRefusesAnythingButQueuedOrAFirstLeasedAttempt", testIngestRefusesOtherStates},
		{"ABodyInObjectStorageIsKeptAsItsKeyAndEveryDeleteRecordsIt", testBlobBodies},
		{"APendingObjectDeleteKeepsTheLatestTimeItWasRecorded", testBlobDeleteTimes},
		{"SearchFindsByMatchWordsTimeAndFiltersWithinTheScope", testSearch},
		{"SearchWordsMatchOnlyThemselves", testSearchWordsMatchOnlyThemselves},
		{"RetryNowMakesWaitingRoutesDue", testRetryNowMakesWaitingRoutesDue},
		{"RetryNowGivesATrippedConsumerOneProbe", testRetryNowGivesATrippedConsumerOneProbe},
		{"ConsumerStatsCountCallsByHourAndByDay", testConsumerStats},
	}
	tests = append(tests, notificationTests...)
	tests = append(tests, eventTypeTests...)
	tests = append(tests, issueTests...)
	tests = append(tests, retentionTests...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fixture is one org with a connection and an endpoint.
type fixture struct {
	org  intake.Org
	conn intake.Connection
	ep   intake.Endpoint
}

func newFixture(t testing.TB, s intake.Store, name string) fixture {
	t.Helper()
	ctx := context.Background()
	f := fixture{org: intake.Org{ID: intake.NewID(), Name: name, CreatedAt: t0}}
	if err := s.CreateOrg(ctx, f.org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte("key-" + f.org.ID)}); err != nil {
		t.Fatal(err)
	}
	f.conn = intake.Connection{ID: intake.NewID(), OrgID: f.org.ID, Provider: "stripe", Name: name, SealedSecrets: []byte{1, 2, 3}, CreatedAt: t0}
	if err := s.CreateConnection(ctx, f.conn); err != nil {
		t.Fatal(err)
	}
	f.ep = intake.Endpoint{ID: intake.NewID(), OrgID: f.org.ID, ConnectionID: f.conn.ID, TokenHash: []byte("hash-" + f.org.ID),
		Enabled: true, MaxBodyBytes: 1 << 20, RatePerSec: 500, Burst: 1000, CreatedAt: t0}
	if err := s.CreateEndpoint(ctx, f.ep); err != nil {
		t.Fatal(err)
	}
	f.org.Version, f.conn.Version, f.ep.Version = 1, 1, 1 // as every row starts
	return f
}

func (f fixture) message(body string, at time.Time) *intake.Message {
	sum := sha256.Sum256([]byte(body))
	return &intake.Message{
		ID: intake.NewID(), OrgID: f.org.ID, ConnectionID: f.conn.ID, EndpointID: f.ep.ID,
		Method: "POST", Query: "a=1", Header: http.Header{"Content-Type": {"application/json"}},
		Body: []byte(body), Digest: hex.EncodeToString(sum[:]), ReceivedAt: at,
		State: intake.MessageQueued, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: at,
	}
}

func (f fixture) ingest(t *testing.T, s intake.Store, body string, at time.Time) *intake.Message {
	t.Helper()
	m := f.message(body, at)
	if err := s.Ingest(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	return m
}

func (f fixture) event(m *intake.Message, providerEventID string) intake.Event {
	return intake.Event{
		ID: intake.NewID(), OrgID: f.org.ID, ConnectionID: f.conn.ID, MessageID: m.ID, Provider: "stripe",
		Type: "stripe.invoice.paid", Kind: intake.KindEvent, ProviderEventID: providerEventID,
		OccurredAt: m.ReceivedAt, ReceivedAt: m.ReceivedAt, Data: json.RawMessage(`{"id":"` + providerEventID + `"}`),
		ObjectIDs: []string{"in_1"}, State: intake.EventPending, MaxAttempts: intake.DefaultMaxAttempts,
		NextAttemptAt: m.ReceivedAt, CreatedAt: m.ReceivedAt,
	}
}

func claimAll(t *testing.T, s intake.Store, now time.Time) []intake.Claim {
	t.Helper()
	c, err := s.ClaimMessages(context.Background(), now, time.Minute, 100)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func claimOne(t *testing.T, s intake.Store, now time.Time) intake.Claim {
	t.Helper()
	c := claimAll(t, s, now)
	if len(c) != 1 {
		t.Fatalf("claimed %d messages, want 1", len(c))
	}
	return c[0]
}

func processed(c intake.Claim, id *intake.Identity, events ...intake.Event) intake.Settlement {
	return intake.Settlement{MessageID: c.Message.ID, Attempt: c.Attempt, To: intake.MessageProcessed,
		Outcome: intake.OutcomeEvents, Identity: id, Events: events}
}

func identity(m *intake.Message, eventID string) *intake.Identity {
	id, _ := intake.IdentityFor(m, eventID, "stripe.invoice.paid", intake.KindEvent)
	return &id
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if intake.ErrorCode(err) != code {
		t.Fatalf("error = %v, want code %s", err, code)
	}
}

func testIngestKeepsRequest(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	m := f.ingest(t, s, `{"id":"evt_1"}`, t0)
	got, err := s.Message(ctx, intake.Scope{}, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != intake.MessageQueued || got.Attempt != 0 || got.MaxAttempts != 6 || !got.ReceivedAt.Equal(t0) ||
		got.Digest != m.Digest || got.Method != "POST" || got.Query != "a=1" || got.EndpointID != f.ep.ID {
		t.Fatalf("stored message differs: %+v", got)
	}
	b, err := s.MessageBody(ctx, intake.Scope{OrgID: f.org.ID}, m.ID)
	if err != nil || string(b.Body) != `{"id":"evt_1"}` || b.BlobKey != "" || b.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("body = %+v %v", b, err)
	}
	_, err = s.Message(ctx, intake.Scope{}, intake.NewID())
	wantCode(t, err, intake.ENOTFOUND)
}

func testConcurrentIngests(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.Ingest(context.Background(), f.message(fmt.Sprintf(`{"n":%d}`, i), t0))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.ListMessages(context.Background(), intake.Scope{}, intake.MessageFilter{Limit: 500})
	if err != nil || len(page.Items) != n {
		t.Fatalf("listed %d messages, want %d (%v)", len(page.Items), n, err)
	}
}

func testBadIngestFailsAlone(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	dup := f.ingest(t, s, `{"first":true}`, t0)
	const n = 40
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			m := f.message(fmt.Sprintf(`{"n":%d}`, i), t0)
			if i%10 == 0 {
				m.ID = dup.ID // collides with a stored message: this one alone must fail
			}
			errs[i] = s.Ingest(context.Background(), m)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if (i%10 == 0) != (err != nil) {
			t.Fatalf("ingest %d: err = %v", i, err)
		}
	}
	if n, err := s.CountMessages(context.Background(), intake.Scope{}, intake.MessageFilter{}); err != nil || n != 1+36 {
		t.Fatalf("%d messages stored, want 37 (%v)", n, err)
	}
}

func testClaimNumbersAttempts(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	m := f.ingest(t, s, `{}`, t0)
	f.ingest(t, s, `{"later":true}`, t0.Add(time.Hour)) // not yet due
	c := claimOne(t, s, t0)
	if c.Message.ID != m.ID || c.Attempt != 1 || string(c.Message.Body) != `{}` || c.Message.Header.Get("Content-Type") == "" {
		t.Fatalf("claim = %+v", c)
	}
	if !c.LeaseUntil.Equal(t0.Add(time.Minute)) {
		t.Fatalf("lease until %v", c.LeaseUntil)
	}
	if again := claimAll(t, s, t0.Add(30*time.Second)); len(again) != 0 {
		t.Fatalf("leased message claimed again: %d", len(again))
	}
}

func testLeaseTakeover(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	m := f.ingest(t, s, `{}`, t0)
	first := claimOne(t, s, t0)
	second := claimOne(t, s, t0.Add(2*time.Minute)) // the first lease expired
	if second.Message.ID != m.ID || second.Attempt != 2 {
		t.Fatalf("takeover = %+v", second)
	}
	_, err := s.SettleMessage(ctx, t0, processed(first, identity(m, "evt_1"), f.event(m, "evt_1")))
	wantCode(t, err, intake.ESTALE)
	got, _ := s.Message(ctx, intake.Scope{}, m.ID)
	if got.State != intake.MessageProcessing || len(got.EventIDs) != 0 {
		t.Fatalf("stale settle changed the message: %+v", got)
	}
	if _, err := s.SettleMessage(ctx, t0, processed(second, identity(m, "evt_1"), f.event(m, "evt_1"))); err != nil {
		t.Fatal(err)
	}
	_, err = s.SettleMessage(ctx, t0, processed(second, identity(m, "evt_1"), f.event(m, "evt_1")))
	wantCode(t, err, intake.ESTALE)
}

func testRacingClaimers(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	const n = 50
	for i := range n {
		f.ingest(t, s, fmt.Sprintf(`{"n":%d}`, i), t0)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := s.ClaimMessages(context.Background(), t0, time.Minute, 7)
				if err != nil {
					t.Error(err)
					return
				}
				if len(c) == 0 {
					return
				}
				mu.Lock()
				for _, x := range c {
					seen[x.Message.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("claimed %d distinct messages, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("message %s claimed %d times", id, k)
		}
	}
}

func testSettleCommitsEvents(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	m := f.ingest(t, s, `{"id":"evt_1"}`, t0)
	c := claimOne(t, s, t0)
	e := f.event(m, "evt_1")
	wake, stop := s.Listen(intake.TopicEvents)
	defer stop()
	st := processed(c, identity(m, "evt_1"), e)
	st.ProviderEventID = "evt_1"
	out, err := s.SettleMessage(ctx, t0, st)
	if err != nil {
		t.Fatal(err)
	}
	if out.State != intake.MessageProcessed || len(out.Events) != 1 || out.Events[0].ID != e.ID {
		t.Fatalf("settled = %+v", out)
	}
	select {
	case <-wake:
	default:
		t.Fatal("settling events did not wake the event listeners")
	}
	got, _ := s.Message(ctx, intake.Scope{}, m.ID)
	if got.State != intake.MessageProcessed || got.ProviderEventID != "evt_1" || got.Outcome != intake.OutcomeEvents ||
		len(got.EventIDs) != 1 || !got.LeaseUntil.IsZero() {
		t.Fatalf("message = %+v", got)
	}
	ev, err := s.Event(ctx, intake.Scope{OrgID: f.org.ID}, e.ID)
	if err != nil || ev.State != intake.EventPending || ev.Type != "stripe.invoice.paid" || string(ev.Data) != `{"id":"evt_1"}` ||
		len(ev.ObjectIDs) != 1 || ev.MessageID != m.ID {
		t.Fatalf("event = %+v %v", ev, err)
	}
}

func testDedupe(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	settle := func(body, eventID string) intake.Settled {
		t.Helper()
		m := f.ingest(t, s, body, t0)
		c := claimOne(t, s, t0)
		out, err := s.SettleMessage(ctx, t0, processed(c, identity(m, eventID), f.event(m, eventID)))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := settle(`{"id":"evt_1"}`, "evt_1"); out.State != intake.MessageProcessed {
		t.Fatalf("first = %+v", out)
	}
	if out := settle(`{"id":"evt_1"}`, "evt_1"); out.State != intake.MessageIgnored || out.Outcome != intake.OutcomeDuplicate || len(out.Events) != 0 {
		t.Fatalf("repeat = %+v", out)
	}
	if out := settle(`{"id":"evt_1","changed":true}`, "evt_1"); out.State != intake.MessageIgnored || out.Outcome != intake.OutcomeConflict {
		t.Fatalf("changed content = %+v", out)
	}
	if out := settle(`{"id":"evt_1"}`, "evt_2"); out.State != intake.MessageProcessed || len(out.Events) != 1 {
		t.Fatalf("same body, new id = %+v", out)
	}
	page, _ := s.ListEvents(ctx, intake.Scope{}, intake.EventFilter{})
	if len(page.Items) != 2 {
		t.Fatalf("%d events, want 2", len(page.Items))
	}
}

func testDigestExpiry(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	settle := func(at time.Time) intake.Settled {
		t.Helper()
		m := f.ingest(t, s, `ping`, at)
		c := claimOne(t, s, at)
		id, ok := intake.IdentityFor(m, "", "none.message", intake.KindEvent)
		if !ok {
			t.Fatal("no digest identity")
		}
		out, err := s.SettleMessage(ctx, at, processed(c, &id, f.event(m, "")))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := settle(t0); out.State != intake.MessageProcessed {
		t.Fatalf("first = %+v", out)
	}
	if out := settle(t0.Add(23 * time.Hour)); out.Outcome != intake.OutcomeDuplicate {
		t.Fatalf("within a day = %+v", out)
	}
	if out := settle(t0.Add(25 * time.Hour)); out.State != intake.MessageProcessed {
		t.Fatalf("after a day = %+v", out)
	}
}

func testBatchItemUnique(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	m1 := f.ingest(t, s, `[1,2]`, t0)
	c1 := claimOne(t, s, t0)
	out1, err := s.SettleMessage(ctx, t0, processed(c1, identity(m1, "batch-1"), f.event(m1, "item-1"), f.event(m1, "item-2")))
	if err != nil || len(out1.Events) != 2 {
		t.Fatalf("first batch = %+v %v", out1, err)
	}
	m2 := f.ingest(t, s, `[2,3]`, t0)
	c2 := claimOne(t, s, t0)
	out2, err := s.SettleMessage(ctx, t0, processed(c2, identity(m2, "batch-2"), f.event(m2, "item-2"), f.event(m2, "item-3")))
	if err != nil || out2.State != intake.MessageProcessed || len(out2.Events) != 1 {
		t.Fatalf("second batch = %+v %v", out2, err)
	}
	ev, err := s.Event(ctx, intake.Scope{}, out2.Events[0].ID)
	if err != nil || ev.ProviderEventID != "item-3" {
		t.Fatalf("second batch made %+v", ev)
	}
}

func testFailedWaits(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	m := f.ingest(t, s, `{}`, t0)
	c := claimOne(t, s, t0)
	_, err := s.SettleMessage(ctx, t0, intake.Settlement{MessageID: m.ID, Attempt: c.Attempt, To: intake.MessageFailed,
		ErrorCode: intake.ErrCodeTransient, ErrorMessage: "secret store down", NextAttemptAt: t0.Add(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := s.Message(ctx, intake.Scope{}, m.ID)
	if got.State != intake.MessageFailed || got.ErrorCode != intake.ErrCodeTransient || got.ErrorMessage != "secret store down" {
		t.Fatalf("message = %+v", got)
	}
	if c := claimAll(t, s, t0.Add(9*time.Second)); len(c) != 0 {
		t.Fatal("failed message claimed before it was due")
	}
	c2 := claimOne(t, s, t0.Add(10*time.Second))
	if c2.Attempt != 2 {
		t.Fatalf("retry attempt = %d", c2.Attempt)
	}
	if _, err := s.SettleMessage(ctx, t0.Add(11*time.Second), processed(c2, nil)); err != nil {
		t.Fatal(err)
	}
	attempts, err := s.MessageAttempts(ctx, intake.Scope{OrgID: f.org.ID}, m.ID)
	if err != nil || len(attempts) != 2 {
		t.Fatalf("attempts = %+v %v", attempts, err)
	}
	if a := attempts[0]; a.Attempt != 1 || a.State != intake.MessageFailed || a.ErrorCode != intake.ErrCodeTransient ||
		a.ErrorMessage != "secret store down" || !a.At.Equal(t0) {
		t.Fatalf("first attempt = %+v", a)
	}
	if a := attempts[1]; a.Attempt != 2 || a.State != intake.MessageProcessed || !a.At.Equal(t0.Add(11*time.Second)) {
		t.Fatalf("second attempt = %+v", a)
	}
	other := newFixture(t, s, "other")
	if l, _ := s.MessageAttempts(ctx, intake.Scope{OrgID: other.org.ID}, m.ID); len(l) != 0 {
		t.Fatal("another org sees the attempts")
	}
}

func testInvalidTransition(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	m := f.ingest(t, s, `{}`, t0)
	c := claimOne(t, s, t0)
	for _, to := range []intake.MessageState{intake.MessageQueued, intake.MessageProcessing, "bogus"} {
		_, err := s.SettleMessage(ctx, t0, intake.Settlement{MessageID: m.ID, Attempt: c.Attempt, To: to})
		wantCode(t, err, intake.EINVALID)
	}
	if _, err := s.SettleMessage(ctx, t0, intake.Settlement{MessageID: m.ID, Attempt: c.Attempt, To: intake.MessageDead,
		ErrorCode: intake.ErrCodePermanent}); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Message(ctx, intake.Scope{}, m.ID)
	if got.State != intake.MessageDead {
		t.Fatalf("state = %s", got.State)
	}
	if c := claimAll(t, s, t0.Add(time.Hour)); len(c) != 0 {
		t.Fatal("dead message claimed")
	}
}

func testRelease(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	f.ingest(t, s, `{}`, t0)
	c := claimOne(t, s, t0)
	if err := s.ReleaseMessage(ctx, t0, 0, c.Message.ID, c.Attempt); err != nil {
		t.Fatal(err)
	}
	if again := claimOne(t, s, t0); again.Attempt != 1 {
		t.Fatalf("after release attempt = %d, want the released attempt 1 again", again.Attempt)
	}
}

func testScope(t *testing.T, s intake.Store) {
	ctx := context.Background()
	a := newFixture(t, s, "a")
	b := newFixture(t, s, "b")
	m := a.ingest(t, s, `{}`, t0)
	sb := intake.Scope{OrgID: b.org.ID}
	_, err := s.Message(ctx, sb, m.ID)
	wantCode(t, err, intake.ENOTFOUND)
	_, err = s.MessageBody(ctx, sb, m.ID)
	wantCode(t, err, intake.ENOTFOUND)
	_, err = s.Connection(ctx, sb, a.conn.ID)
	wantCode(t, err, intake.ENOTFOUND)
	_, err = s.Endpoint(ctx, sb, a.ep.ID)
	wantCode(t, err, intake.ENOTFOUND)
	disabled := a.ep
	disabled.Enabled = false
	wantCode(t, s.UpdateEndpoint(ctx, sb, disabled), intake.ENOTFOUND)
	wantCode(t, s.ReplaceConnectionSecrets(ctx, sb, a.conn.ID, []byte("x")), intake.ENOTFOUND)
	if err := s.ReplaceConnectionSecrets(ctx, intake.Scope{OrgID: a.org.ID}, a.conn.ID, []byte("rotated")); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Connection(ctx, intake.Scope{}, a.conn.ID); string(c.SealedSecrets) != "rotated" {
		t.Fatalf("secrets after rotation = %q", c.SealedSecrets)
	}
	if page, _ := s.ListMessages(ctx, sb, intake.MessageFilter{}); len(page.Items) != 0 {
		t.Fatal("org b lists org a's messages")
	}
	if l, _ := s.ListConnections(ctx, sb); len(l) != 1 || l[0].ID != b.conn.ID {
		t.Fatalf("org b lists connections %+v", l)
	}
	if l, _ := s.ListEndpoints(ctx, sb); len(l) != 1 || l[0].ID != b.ep.ID {
		t.Fatalf("org b lists endpoints %+v", l)
	}
	if l, _ := s.ListOrgs(ctx, sb); len(l) != 1 || l[0].ID != b.org.ID {
		t.Fatalf("org b lists orgs %+v", l)
	}
	if l, _ := s.ListOrgs(ctx, intake.Scope{}); len(l) != 2 {
		t.Fatalf("staff lists %d orgs", len(l))
	}
	o, _, err := s.OrgByKeyHash(ctx, []byte("key-"+a.org.ID))
	if err != nil || o.ID != a.org.ID {
		t.Fatalf("org by key = %+v %v", o, err)
	}
	// An endpoint cannot be attached to another org's connection.
	err = s.CreateEndpoint(ctx, intake.Endpoint{ID: intake.NewID(), OrgID: b.org.ID, ConnectionID: a.conn.ID,
		TokenHash: []byte("x"), Enabled: true, MaxBodyBytes: 1, Burst: 1, CreatedAt: t0})
	wantCode(t, err, intake.ENOTFOUND)
}

func testPagination(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	var ids []string
	for i := range 5 {
		ids = append(ids, f.ingest(t, s, fmt.Sprintf(`%d`, i), t0).ID)
	}
	var got []string
	cursor := ""
	for {
		page, err := s.ListMessages(ctx, intake.Scope{}, intake.MessageFilter{Limit: 2, Cursor: cursor, EndpointID: f.ep.ID})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Items {
			got = append(got, m.ID)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if len(got) != 5 {
		t.Fatalf("paged %d, want 5", len(got))
	}
	for i := range got {
		if got[i] != ids[4-i] {
			t.Fatalf("order %v, want newest first %v", got, ids)
		}
	}
	page, _ := s.ListMessages(ctx, intake.Scope{}, intake.MessageFilter{State: intake.MessageProcessed})
	if len(page.Items) != 0 {
		t.Fatal("state filter ignored")
	}
}

func testEndpoints(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	ep, err := s.EndpointByTokenHash(ctx, f.ep.TokenHash)
	if err != nil || ep.ID != f.ep.ID || ep.Provider != "stripe" || !ep.Enabled {
		t.Fatalf("by token = %+v %v", ep, err)
	}
	ep.Enabled, ep.RatePerSec, ep.MaxBodyBytes = false, 0, 2048
	if err := s.UpdateEndpoint(ctx, intake.Scope{OrgID: f.org.ID}, ep); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Endpoint(ctx, intake.Scope{}, ep.ID)
	if got.Enabled || got.RatePerSec != 0 || got.MaxBodyBytes != 2048 {
		t.Fatalf("updated = %+v", got)
	}
	_, err = s.EndpointByTokenHash(ctx, []byte("nope"))
	wantCode(t, err, intake.ENOTFOUND)
}

// pendingEvent commits one pending event through a processed message.
func (f fixture) pendingEvent(t *testing.T, s intake.Store, objectIDs ...string) intake.Event {
	t.Helper()
	m := f.ingest(t, s, fmt.Sprintf(`{"n":%q}`, intake.NewID()), t0)
	c := claimOne(t, s, t0)
	e := f.event(m, "evt_"+m.ID)
	e.ObjectIDs = objectIDs
	st := processed(c, identity(m, "evt_"+m.ID), e)
	st.ProviderEventID = e.ProviderEventID
	if _, err := s.SettleMessage(context.Background(), t0, st); err != nil {
		t.Fatal(err)
	}
	got, err := s.Event(context.Background(), intake.Scope{}, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func claimEvents(t *testing.T, s intake.Store, now time.Time) []intake.EventClaim {
	t.Helper()
	c, err := s.ClaimEvents(context.Background(), now, time.Minute, 100)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func delivery(e intake.Event, consumerID string, attempt int, outcome string) intake.Delivery {
	return intake.Delivery{ID: intake.NewID(), OrgID: e.OrgID, EventID: e.ID, ConsumerID: consumerID, Attempt: attempt,
		Outcome: outcome, StatusCode: 200, Latency: 3 * time.Millisecond, At: t0}
}

func testEventClaims(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	e := f.pendingEvent(t, s)
	c := claimEvents(t, s, t0)
	if len(c) != 1 || c[0].Event.ID != e.ID || c[0].Attempt != 1 || !c[0].LeaseUntil.Equal(t0.Add(time.Minute)) || len(c[0].Done) != 0 {
		t.Fatalf("claims = %+v", c)
	}
	if again := claimEvents(t, s, t0.Add(30*time.Second)); len(again) != 0 {
		t.Fatal("a leased event was claimed again")
	}
}

func testEventLeaseTakeover(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	e := f.pendingEvent(t, s)
	first := claimEvents(t, s, t0)
	second := claimEvents(t, s, t0.Add(2*time.Minute))
	if len(second) != 1 || second[0].Attempt != 2 || second[0].Event.State != intake.EventRetrying {
		t.Fatalf("takeover = %+v", second)
	}
	_, err := s.FanOut(ctx, t0, intake.FanOut{EventID: e.ID, Attempt: first[0].Attempt})
	wantCode(t, err, intake.ESTALE)
	if _, err := s.FanOut(ctx, t0, intake.FanOut{EventID: e.ID, Attempt: second[0].Attempt}); err != nil {
		t.Fatal(err)
	}
	if st := eventState(t, s, e.ID); st != intake.EventNoConsumer {
		t.Fatalf("taken over and fanned out to no one: %s", st)
	}
}

func testConsumers(t *testing.T, s intake.Store) {
	ctx := context.Background()
	a := newFixture(t, s, "a")
	b := newFixture(t, s, "b")
	c := intake.Consumer{ID: intake.NewID(), OrgID: a.org.ID, Name: "billing", App: "billing", URL: "http://127.0.0.1:9/hooks",
		EventTypes: []string{"stripe.invoice.*", "github.push"}, Completion: true, Enabled: true, SealedSecret: []byte("sealed"), CreatedAt: t0}
	if err := s.CreateConsumer(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Version = 1
	got, err := s.Consumer(ctx, intake.Scope{OrgID: a.org.ID}, c.ID)
	if err != nil || got.URL != c.URL || len(got.EventTypes) != 2 || !got.Completion || !got.Enabled || string(got.SealedSecret) != "sealed" {
		t.Fatalf("consumer = %+v %v", got, err)
	}
	_, err = s.Consumer(ctx, intake.Scope{OrgID: b.org.ID}, c.ID)
	wantCode(t, err, intake.ENOTFOUND)
	off := c
	off.Enabled = false
	wantCode(t, s.UpdateConsumer(ctx, intake.Scope{OrgID: b.org.ID}, off), intake.ENOTFOUND)
	if l, _ := s.ListConsumers(ctx, intake.Scope{OrgID: b.org.ID}); len(l) != 0 {
		t.Fatal("org b lists org a's consumers")
	}
	if err := s.UpdateConsumer(ctx, intake.Scope{OrgID: a.org.ID}, off); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.ListConsumers(ctx, intake.Scope{OrgID: a.org.ID}); len(l) != 1 || l[0].Enabled {
		t.Fatalf("consumers = %+v", l)
	}
	// Every setting saves, the rules among them; the secret stays.
	edited := off
	edited.Version++ // over the change just written
	edited.Name, edited.URL, edited.EventTypes, edited.Completion, edited.Enabled = "ledger", "http://127.0.0.1:9/v2", []string{"*"}, false, true
	edited.Filter, edited.Transform = `event.type == "x"`, "function transform(e) { return null }"
	edited.SealedSecret = []byte("other")
	if err := s.UpdateConsumer(ctx, intake.Scope{}, edited); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Consumer(ctx, intake.Scope{}, c.ID)
	if got.Name != "ledger" || got.URL != edited.URL || len(got.EventTypes) != 1 || got.Completion || !got.Enabled ||
		got.Filter != edited.Filter || got.Transform != edited.Transform || string(got.SealedSecret) != "sealed" {
		t.Fatalf("updated consumer = %+v", got)
	}
}

func testSubjectLinks(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	other := newFixture(t, s, "other")
	link := intake.SubjectLink{ID: intake.NewID(), ConnectionID: f.conn.ID, ProviderObjectID: "in_1", App: "billing", RecordID: "r-1", CreatedAt: t0}
	wantCode(t, s.PutSubjectLink(ctx, intake.Scope{OrgID: other.org.ID}, link), intake.ENOTFOUND)
	if err := s.PutSubjectLink(ctx, intake.Scope{OrgID: f.org.ID}, link); err != nil {
		t.Fatal(err)
	}
	link.ID, link.RecordID = intake.NewID(), "r-2" // re-registered: the later link wins
	if err := s.PutSubjectLink(ctx, intake.Scope{OrgID: f.org.ID}, link); err != nil {
		t.Fatal(err)
	}
	e := f.pendingEvent(t, s, "cus_9", "in_1")
	if e.Subject == nil || e.Subject.App != "billing" || e.Subject.RecordID != "r-2" {
		t.Fatalf("subject = %+v", e.Subject)
	}
	if plain := f.pendingEvent(t, s, "in_unknown"); plain.Subject != nil {
		t.Fatalf("unlinked object got subject %+v", plain.Subject)
	}
}

func testAudit(t *testing.T, s intake.Store) {
	ctx := context.Background()
	a := newFixture(t, s, "a")
	b := newFixture(t, s, "b")
	for i, org := range []string{a.org.ID, b.org.ID, a.org.ID} {
		if err := s.RecordAudit(ctx, intake.AuditEntry{ID: intake.NewID(), OrgID: org, Actor: "staff", Action: "endpoint.update",
			TargetType: "endpoint", TargetID: fmt.Sprint(i), Detail: "enabled=false", At: t0}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.ListAudit(ctx, intake.Scope{OrgID: a.org.ID}, intake.AuditFilter{Limit: 1})
	if err != nil || len(page.Items) != 1 || page.Items[0].TargetID != "2" || page.NextCursor == "" {
		t.Fatalf("first page = %+v %v", page, err)
	}
	page, _ = s.ListAudit(ctx, intake.Scope{OrgID: a.org.ID}, intake.AuditFilter{Cursor: page.NextCursor})
	if len(page.Items) != 1 || page.Items[0].TargetID != "0" || !page.Items[0].At.Equal(t0) || page.Items[0].Detail != "enabled=false" {
		t.Fatalf("second page = %+v", page)
	}
	if all, _ := s.ListAudit(ctx, intake.Scope{}, intake.AuditFilter{}); len(all.Items) != 3 {
		t.Fatalf("staff sees %d entries", len(all.Items))
	}
}

func testEraseBodies(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	other := newFixture(t, s, "other")
	m := f.ingest(t, s, `{"id":"evt_1"}`, t0)
	c := claimOne(t, s, t0)
	if _, err := s.SettleMessage(ctx, t0, processed(c, identity(m, "evt_1"), f.event(m, "evt_1"))); err != nil {
		t.Fatal(err)
	}
	later := f.ingest(t, s, `{"id":"evt_2"}`, t0.Add(2*time.Hour))
	_, err := s.EraseBodies(ctx, t0.Add(time.Hour), intake.Scope{OrgID: other.org.ID}, f.ep.ID, t0, t0.Add(time.Hour))
	wantCode(t, err, intake.ENOTFOUND)
	n, err := s.EraseBodies(ctx, t0.Add(time.Hour), intake.Scope{OrgID: f.org.ID}, f.ep.ID, t0, t0.Add(time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("erased %d, %v", n, err)
	}
	if _, err := s.MessageBody(ctx, intake.Scope{}, m.ID); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("erased body still served: %v", err)
	}
	if _, err := s.MessageBody(ctx, intake.Scope{}, later.ID); err != nil {
		t.Fatalf("a body outside the range was erased: %v", err)
	}
	// The same delivery re-sent: still a duplicate.
	again := f.ingest(t, s, `{"id":"evt_1"}`, t0.Add(3*time.Hour))
	claims := claimAll(t, s, t0.Add(3*time.Hour))
	for _, c := range claims {
		if c.Message.ID != again.ID {
			continue
		}
		out, err := s.SettleMessage(ctx, t0, processed(c, identity(again, "evt_1"), f.event(again, "evt_1")))
		if err != nil || out.Outcome != intake.OutcomeDuplicate {
			t.Fatalf("re-sent after erasure = %+v %v", out, err)
		}
		return
	}
	t.Fatal("the re-sent message was not claimed")
}

func testAPIKeys(t *testing.T, s intake.Store) {
	ctx := context.Background()
	a := newFixture(t, s, "a")
	b := newFixture(t, s, "b")
	k := intake.APIKey{ID: intake.NewID(), OrgID: a.org.ID, Prefix: "ik_second", Hash: []byte("second-" + a.org.ID), Role: intake.RoleViewer,
		CreatedAt: t0}
	wantCode(t, s.CreateAPIKey(ctx, intake.Scope{OrgID: b.org.ID}, k), intake.ENOTFOUND)
	if err := s.CreateAPIKey(ctx, intake.Scope{OrgID: a.org.ID}, k); err != nil {
		t.Fatal(err)
	}
	if o, role, err := s.OrgByKeyHash(ctx, k.Hash); err != nil || o.ID != a.org.ID || role != intake.RoleViewer {
		t.Fatalf("second key finds %+v as %q %v; want org a as viewer", o, role, err)
	}
	// A key made without a role is an admin, as every key was before roles.
	if _, role, err := s.OrgByKeyHash(ctx, []byte("key-"+a.org.ID)); err != nil || role != intake.RoleAdmin {
		t.Fatalf("the first key is %q %v, want admin", role, err)
	}
	keys, err := s.ListAPIKeys(ctx, intake.Scope{OrgID: a.org.ID})
	if err != nil || len(keys) != 2 || keys[1].Prefix != "ik_second" || len(keys[1].Hash) != 0 ||
		keys[0].Role != intake.RoleAdmin || keys[1].Role != intake.RoleViewer {
		t.Fatalf("keys = %+v %v; want the first admin, the second viewer", keys, err)
	}
	wantCode(t, s.RevokeAPIKey(ctx, intake.Scope{OrgID: b.org.ID}, k.ID, t0), intake.ENOTFOUND)
	if err := s.RevokeAPIKey(ctx, intake.Scope{OrgID: a.org.ID}, k.ID, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.OrgByKeyHash(ctx, k.Hash)
	wantCode(t, err, intake.ENOTFOUND)
	if _, _, err := s.OrgByKeyHash(ctx, []byte("key-"+a.org.ID)); err != nil {
		t.Fatalf("the first key stopped too: %v", err)
	}
	keys, _ = s.ListAPIKeys(ctx, intake.Scope{})
	revoked := 0
	for _, key := range keys {
		if !key.RevokedAt.IsZero() {
			revoked++
			if !key.RevokedAt.Equal(t0.Add(time.Hour)) {
				t.Fatalf("revoked at %v", key.RevokedAt)
			}
		}
	}
	if len(keys) != 3 || revoked != 1 {
		t.Fatalf("staff lists %d keys, %d revoked", len(keys), revoked)
	}
}

func testSoftDelete(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	other := newFixture(t, s, "other")
	m := f.ingest(t, s, `{}`, t0)
	c := intake.Consumer{ID: intake.NewID(), OrgID: f.org.ID, Name: "n", App: "a", URL: "http://127.0.0.1:9/", EventTypes: []string{"*"},
		Enabled: true, SealedSecret: []byte("s"), CreatedAt: t0}
	if err := s.CreateConsumer(ctx, c); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.Delete(ctx, intake.Scope{OrgID: other.org.ID}, intake.DeleteConsumer, c.ID, t0), intake.ENOTFOUND)
	wantCode(t, s.Delete(ctx, intake.Scope{}, "message", m.ID, t0), intake.EINVALID)
	if err := s.Delete(ctx, intake.Scope{OrgID: f.org.ID}, intake.DeleteConsumer, c.ID, t0); err != nil {
		t.Fatal(err)
	}
	_, err := s.Consumer(ctx, intake.Scope{}, c.ID)
	wantCode(t, err, intake.ENOTFOUND)
	if l, _ := s.ListConsumers(ctx, intake.Scope{OrgID: f.org.ID}); len(l) != 0 {
		t.Fatalf("a deleted consumer is listed: %+v", l)
	}
	wantCode(t, s.UpdateConsumer(ctx, intake.Scope{}, c), intake.ENOTFOUND)
	wantCode(t, s.Delete(ctx, intake.Scope{}, intake.DeleteConsumer, c.ID, t0), intake.ENOTFOUND)

	// Deleting the connection deletes its endpoint; the messages stay.
	if err := s.Delete(ctx, intake.Scope{OrgID: f.org.ID}, intake.DeleteConnection, f.conn.ID, t0); err != nil {
		t.Fatal(err)
	}
	_, err = s.Connection(ctx, intake.Scope{}, f.conn.ID)
	wantCode(t, err, intake.ENOTFOUND)
	_, err = s.Endpoint(ctx, intake.Scope{}, f.ep.ID)
	wantCode(t, err, intake.ENOTFOUND)
	_, err = s.EndpointByTokenHash(ctx, f.ep.TokenHash)
	wantCode(t, err, intake.ENOTFOUND)
	if l, _ := s.ListEndpoints(ctx, intake.Scope{OrgID: f.org.ID}); len(l) != 0 {
		t.Fatalf("a deleted endpoint is listed: %+v", l)
	}
	if l, _ := s.ListConnections(ctx, intake.Scope{OrgID: f.org.ID}); len(l) != 0 {
		t.Fatalf("a deleted connection is listed: %+v", l)
	}
	wantCode(t, s.ReplaceConnectionSecrets(ctx, intake.Scope{}, f.conn.ID, []byte("x")), intake.ENOTFOUND)
	wantCode(t, s.UpdateEndpoint(ctx, intake.Scope{}, f.ep), intake.ENOTFOUND)
	err = s.CreateEndpoint(ctx, intake.Endpoint{ID: intake.NewID(), OrgID: f.org.ID, ConnectionID: f.conn.ID, TokenHash: []byte("new"),
		Enabled: true, MaxBodyBytes: 1, Burst: 1, CreatedAt: t0})
	wantCode(t, err, intake.ENOTFOUND)
	if got, err := s.Message(ctx, intake.Scope{OrgID: f.org.ID}, m.ID); err != nil || got.ID != m.ID {
		t.Fatalf("history lost with the connection: %v", err)
	}
	if _, err := s.Endpoint(ctx, intake.Scope{}, other.ep.ID); err != nil {
		t.Fatalf("another org's endpoint went too: %v", err)
	}
}

func testOrgRetention(t *testing.T, s intake.Store) {
	ctx := context.Background()
	short := newFixture(t, s, "short")
	long := newFixture(t, s, "long")
	plain := newFixture(t, s, "plain")
	retain := func(sc intake.Scope, id string, body, rows time.Duration) error {
		o := liveOrg(t, s, id)
		o.BodyRetention, o.Retention = body, rows
		return s.UpdateOrg(ctx, sc, o)
	}
	wantCode(t, retain(intake.Scope{OrgID: long.org.ID}, short.org.ID, time.Hour, time.Hour), intake.ENOTFOUND)
	if err := retain(intake.Scope{OrgID: short.org.ID}, short.org.ID, time.Hour, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := retain(intake.Scope{}, long.org.ID, 48*time.Hour, 96*time.Hour); err != nil {
		t.Fatal(err)
	}
	orgs, _ := s.ListOrgs(ctx, intake.Scope{OrgID: short.org.ID})
	if len(orgs) != 1 || orgs[0].BodyRetention != time.Hour || orgs[0].Retention != 2*time.Hour {
		t.Fatalf("org = %+v", orgs)
	}
	settle := func(f fixture) *intake.Message {
		m := f.ingest(t, s, fmt.Sprintf(`{"org":%q}`, f.org.Name), t0)
		for _, c := range claimAll(t, s, t0) {
			if _, err := s.SettleMessage(ctx, t0, intake.Settlement{MessageID: c.Message.ID, Attempt: c.Attempt,
				To: intake.MessageProcessed, Outcome: intake.OutcomeNoEvents}); err != nil {
				t.Fatal(err)
			}
		}
		return m
	}
	ms, ml, mp := settle(short), settle(long), settle(plain)
	bodyLeft := func(m *intake.Message) bool {
		_, err := s.MessageBody(ctx, intake.Scope{}, m.ID)
		return err == nil
	}
	// Three hours on, with a server default of a day: only the short org's
	// body and row are past their retention.
	now := t0.Add(3 * time.Hour)
	drop := func(now time.Time) (int, error) { return dropBodies(t, s, now, 24*time.Hour, 1), nil }
	if n, err := drop(now); err != nil || n != 1 || bodyLeft(ms) || !bodyLeft(ml) || !bodyLeft(mp) {
		t.Fatalf("dropped %d bodies (%v): short %v long %v plain %v", n, err, bodyLeft(ms), bodyLeft(ml), bodyLeft(mp))
	}
	if n, err := s.DeleteSettled(ctx, now, 24*time.Hour, 100); err != nil || n != 1 {
		t.Fatalf("deleted %d messages, %v", n, err)
	}
	// Thirty hours on: the plain org's body is past the default; the long
	// org keeps its own longer window.
	now = t0.Add(30 * time.Hour)
	if n, err := drop(now); err != nil || n != 1 || !bodyLeft(ml) || bodyLeft(mp) {
		t.Fatalf("dropped %d bodies (%v): long %v plain %v", n, err, bodyLeft(ml), bodyLeft(mp))
	}
	// Clearing the overrides returns the org to the default.
	if err := retain(intake.Scope{}, long.org.ID, 0, 0); err != nil {
		t.Fatal(err)
	}
	if n, _ := drop(now); n != 1 || bodyLeft(ml) {
		t.Fatalf("after clearing: dropped %d", n)
	}
}

// A claim reads bodies up to intake.ClaimBodyLimit with their messages; a
// larger one the database keeps comes back as its size, with the headers,
// for the worker to read on its own (MessageBody) within its body memory.
func testClaimDefersLargeBodies(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	small := f.ingest(t, s, `{"small":true}`, t0)
	limit := f.ingest(t, s, `{"pad":"`+strings.Repeat("y", intake.ClaimBodyLimit-10)+`"}`, t0)
	large := f.ingest(t, s, `{"pad":"`+strings.Repeat("x", intake.ClaimBodyLimit)+`"}`, t0)
	claims := claimAll(t, s, t0)
	if len(claims) != 3 {
		t.Fatalf("claimed %d, want 3", len(claims))
	}
	for _, c := range claims {
		m := c.Message
		if m.BodyExpired || len(m.Header) == 0 {
			t.Fatalf("message %s: expired %v, header %v; want its stored request", m.ID, m.BodyExpired, m.Header)
		}
		switch m.ID {
		case small.ID, limit.ID:
			want := small
			if m.ID == limit.ID {
				want = limit
			}
			if !bytes.Equal(m.Body, want.Body) || m.DeferredBody != 0 {
				t.Fatalf("a body of %d bytes came with %d bytes, deferred %d; want it read with the claim", len(want.Body), len(m.Body), m.DeferredBody)
			}
		case large.ID:
			if m.Body != nil || m.DeferredBody != int64(len(large.Body)) {
				t.Fatalf("a body of %d bytes came with %d bytes, deferred %d; want it deferred by its size", len(large.Body), len(m.Body), m.DeferredBody)
			}
			sb, err := s.MessageBody(context.Background(), intake.Scope{}, m.ID)
			if err != nil || !bytes.Equal(sb.Body, large.Body) {
				t.Fatalf("the deferred body read back: %d bytes, %v; want %d", len(sb.Body), err, len(large.Body))
			}
		}
	}
}

func testFilters(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	e1 := f.pendingEvent(t, s)
	e2 := f.pendingEvent(t, s)
	page, err := s.ListMessages(ctx, intake.Scope{}, intake.MessageFilter{ProviderEventID: e1.ProviderEventID})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != e1.MessageID {
		t.Fatalf("by provider event id: %+v %v", page.Items, err)
	}
	if n, _ := s.CountMessages(ctx, intake.Scope{}, intake.MessageFilter{ProviderEventID: "evt_none"}); n != 0 {
		t.Fatalf("counted %d for an unknown provider event", n)
	}
	consumer := f.consumer(t, s, "c", intake.Controls{})
	for _, c := range claimEvents(t, s, t0) {
		fo := intake.FanOut{EventID: c.Event.ID, Attempt: c.Attempt, Lease: time.Minute}
		if c.Event.ID == e2.ID {
			fo.Routes = to(consumer)
		}
		out, err := s.FanOut(ctx, t0, fo)
		if err != nil {
			t.Fatal(err)
		}
		for _, rc := range out.Calls {
			settleRoute(t, s, t0, rc, intake.DeliveryHandled)
		}
	}
	events, err := s.ListEvents(ctx, intake.Scope{OrgID: f.org.ID}, intake.EventFilter{ConsumerID: consumer.ID})
	if err != nil || len(events.Items) != 1 || events.Items[0].ID != e2.ID {
		t.Fatalf("by consumer: %+v %v", events.Items, err)
	}
}

func testReplayJobs(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	other := newFixture(t, s, "other")
	if _, ok, err := s.ClaimReplayJob(ctx, t0, time.Minute); err != nil || ok {
		t.Fatalf("claimed from no jobs: %v %v", ok, err)
	}
	first := intake.ReplayJob{ID: intake.NewID(), OrgID: f.org.ID, EndpointID: f.ep.ID, Since: t0.Add(-time.Hour), Until: t0,
		Total: 3, CreatedAt: t0, UpdatedAt: t0}
	second := first
	second.ID, second.CreatedAt, second.UpdatedAt = intake.NewID(), t0.Add(time.Second), t0.Add(time.Second)
	for _, j := range []intake.ReplayJob{first, second} {
		if err := s.CreateReplayJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ReplayJob(ctx, intake.Scope{OrgID: f.org.ID}, first.ID)
	if err != nil || got.Total != 3 || got.Done != 0 || got.Finished() || !got.Since.Equal(first.Since) || !got.Until.Equal(t0) || got.EndpointID != f.ep.ID {
		t.Fatalf("job = %+v, %v", got, err)
	}
	_, err = s.ReplayJob(ctx, intake.Scope{OrgID: other.org.ID}, first.ID)
	wantCode(t, err, intake.ENOTFOUND)

	// The oldest is claimed first, and a leased job is not claimed again.
	a, ok, err := s.ClaimReplayJob(ctx, t0, time.Minute)
	if err != nil || !ok || a.ID != first.ID || !a.LeaseUntil.Equal(t0.Add(time.Minute)) || a.Owner == "" {
		t.Fatalf("first claim = %+v %v %v", a, ok, err)
	}
	b, ok, err := s.ClaimReplayJob(ctx, t0, time.Minute)
	if err != nil || !ok || b.ID != second.ID {
		t.Fatalf("second claim = %+v %v %v", b, ok, err)
	}
	if _, ok, _ := s.ClaimReplayJob(ctx, t0.Add(30*time.Second), time.Minute); ok {
		t.Fatal("a job was claimed while both are leased")
	}
	a.Done, a.Cursor = 2, "cursor-2"
	if err := s.SaveReplayJob(ctx, a, t0.Add(30*time.Second), time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ReplayJob(ctx, intake.Scope{}, a.ID); got.Done != 2 || got.Cursor != "cursor-2" || !got.UpdatedAt.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("saved progress reads as %+v", got)
	}

	// b ends; the runner of a stops; once its lease ends another takes a
	// over from where it got to, and the first can no longer save.
	b.FinishedAt = t0.Add(40 * time.Second)
	if err := s.SaveReplayJob(ctx, b, t0.Add(40*time.Second), time.Minute); err != nil {
		t.Fatal(err)
	}
	c, ok, err := s.ClaimReplayJob(ctx, t0.Add(95*time.Second), time.Minute)
	if err != nil || !ok || c.ID != a.ID || c.Done != 2 || c.Cursor != "cursor-2" || c.Owner == a.Owner {
		t.Fatalf("takeover = %+v %v %v", c, ok, err)
	}
	a.Done = 3
	wantCode(t, s.SaveReplayJob(ctx, a, t0.Add(96*time.Second), time.Minute), intake.ESTALE)
	c.Done, c.Cursor, c.FinishedAt = 3, "cursor-3", t0.Add(97*time.Second)
	if err := s.SaveReplayJob(ctx, c, t0.Add(97*time.Second), time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ReplayJob(ctx, intake.Scope{OrgID: f.org.ID}, a.ID); !got.Finished() || got.Done != 3 {
		t.Fatalf("finished job reads as %+v", got)
	}
	// A finished job is never claimed again, however long after.
	if j, ok, _ := s.ClaimReplayJob(ctx, t0.Add(time.Hour), time.Minute); ok && j.ID == a.ID {
		t.Fatal("a finished job was claimed")
	}
}

// testClaimSkipsOrgs: a claim told to skip orgs takes none of their
// messages, due or with a lapsed lease, however much earlier they came, and
// takes them again once not told to.
func testClaimSkipsOrgs(t *testing.T, s intake.Store) {
	ctx := context.Background()
	a, b := newFixture(t, s, "acme"), newFixture(t, s, "beta")
	for i := range 5 {
		b.ingest(t, s, fmt.Sprintf(`{"b":%d}`, i), t0)
	}
	lapsed, err := s.ClaimMessages(ctx, t0, time.Second, 2)
	if err != nil || len(lapsed) != 2 {
		t.Fatalf("claim: %v, %d", err, len(lapsed))
	}
	mine := a.ingest(t, s, `{"a":1}`, t0.Add(time.Minute))
	later := t0.Add(2 * time.Minute) // the two leases have lapsed; beta's are all due
	got, err := s.ClaimMessages(ctx, later, time.Minute, 10, b.org.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Message.ID != mine.ID {
		t.Fatalf("claimed %d messages skipping beta, want only acme's", len(got))
	}
	if got, err = s.ClaimMessages(ctx, later, time.Minute, 10); err != nil || len(got) != 5 {
		t.Fatalf("claimed %d messages (%v) when skipping none, want beta's 5", len(got), err)
	}
}
