package storetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// notificationTests are the cases of intake.Notifications and of the
// notices settlements leave.
var notificationTests = []struct {
	name string
	fn   func(*testing.T, intake.Store)
}{
	{"NotificationSettingsAreScopedAuditedAndReplaced", testNotificationSettings},
	{"UnsentNoticesComeOldestFirstUntilMarkedSent", testUnsentNotices},
	{"ADeadOrForgedMessageLeavesANoticeAboutItsEndpoint", testSettlementNotices},
	{"SubjectNamesNameConsumersConnectionsAndEndpoints", testSubjectNames},
}

func testNotificationSettings(t *testing.T, s intake.Store) {
	ctx := context.Background()
	acme, globex := newFixture(t, s, "acme"), newFixture(t, s, "globex")
	own := intake.Scope{OrgID: acme.org.ID}
	_, err := s.NotificationSettings(ctx, own, acme.org.ID)
	wantCode(t, err, intake.ENOTFOUND)

	n := intake.NotificationSettings{OrgID: acme.org.ID, URL: "https://ops.example/hooks?token=***", SealedURL: []byte{5, 5}, SealedSlackURL: []byte{7, 7},
		Topics: []string{intake.NoticeMessageDead, intake.NoticeStorageQuota}, SealedSecret: []byte{1, 2}, UpdatedAt: t0}
	a := intake.AuditEntry{ID: intake.NewID(), OrgID: acme.org.ID, Actor: "key:ik_test", Action: "notifications.update",
		TargetType: "org", TargetID: acme.org.ID, At: t0}
	if err := s.PutNotificationSettings(ctx, own, n, a); err != nil {
		t.Fatal(err)
	}
	got, err := s.NotificationSettings(ctx, own, acme.org.ID)
	if err != nil || got.URL != n.URL || string(got.SealedURL) != string(n.SealedURL) || string(got.SealedSlackURL) != string(n.SealedSlackURL) ||
		!slices.Equal(got.Topics, n.Topics) || string(got.SealedSecret) != string(n.SealedSecret) || !got.UpdatedAt.Equal(t0) {
		t.Fatalf("settings = %+v %v", got, err)
	}
	entries, err := s.ListAudit(ctx, own, intake.AuditFilter{Limit: 10})
	if err != nil || len(entries.Items) != 1 || entries.Items[0].Action != "notifications.update" {
		t.Fatalf("audit = %+v %v", entries.Items, err)
	}

	// Another org neither reads nor writes them.
	other := intake.Scope{OrgID: globex.org.ID}
	_, err = s.NotificationSettings(ctx, other, acme.org.ID)
	wantCode(t, err, intake.ENOTFOUND)
	hijack := n
	hijack.URL = "https://evil.example/"
	wantCode(t, s.PutNotificationSettings(ctx, other, hijack), intake.ENOTFOUND)
	// Staff may not create them for an org that does not exist.
	wantCode(t, s.PutNotificationSettings(ctx, intake.Scope{}, intake.NotificationSettings{OrgID: intake.NewID(),
		Topics: []string{}, SealedSecret: []byte{1}, UpdatedAt: t0}), intake.ENOTFOUND)

	// A second put replaces every setting, over the version it read; a
	// first put or one over an older version is refused.
	if got.Version != 1 {
		t.Fatalf("new settings are at version %d, want 1", got.Version)
	}
	n.URL, n.SealedURL, n.SealedSlackURL, n.Topics, n.UpdatedAt = "", nil, nil, []string{}, t0.Add(time.Minute)
	wantCode(t, s.PutNotificationSettings(ctx, intake.Scope{}, n), intake.EVERSION) // a second "first" put
	n.Version = 1
	if err := s.PutNotificationSettings(ctx, intake.Scope{}, n); err != nil {
		t.Fatal(err)
	}
	got, err = s.NotificationSettings(ctx, intake.Scope{}, acme.org.ID)
	if err != nil || got.URL != "" || got.SealedURL != nil || got.SealedSlackURL != nil || len(got.Topics) != 0 || !got.UpdatedAt.Equal(n.UpdatedAt) || got.Version != 2 {
		t.Fatalf("replaced settings = %+v %v", got, err)
	}
	stale := n
	stale.URL = "https://stale.example/"
	wantCode(t, s.PutNotificationSettings(ctx, own, stale), intake.EVERSION)
	if got, _ := s.NotificationSettings(ctx, own, acme.org.ID); got.URL != "" || got.Version != 2 {
		t.Fatalf("a put over an older version changed the settings: %+v", got)
	}
}

func testUnsentNotices(t *testing.T, s intake.Store) {
	ctx := context.Background()
	acme, globex := newFixture(t, s, "acme"), newFixture(t, s, "globex")
	notice := func(f fixture, topic, subject string, at time.Time) intake.Notice {
		t.Helper()
		n := intake.Notice{ID: intake.NewID(), OrgID: f.org.ID, Topic: topic, Subject: subject, Detail: "d " + subject, At: at}
		if err := s.InsertNotice(ctx, n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	late := notice(acme, intake.NoticeEventDead, "c1", t0.Add(2*time.Second))
	early := notice(globex, intake.NoticeStorageQuota, "storage", t0)
	mid := notice(acme, intake.NoticeEventDead, "c1", t0.Add(time.Second))
	other := notice(acme, intake.NoticeEventDead, "c2", t0.Add(3*time.Second))

	got, err := s.UnsentNotices(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if ids := noticeIDs(got); !slices.Equal(ids, []string{early.ID, mid.ID, late.ID}) {
		t.Fatalf("unsent = %v, want the three oldest in order", ids)
	}
	if got[0] != early {
		t.Fatalf("notice read back as %+v, want %+v", got[0], early)
	}
	if at, err := s.LastSentNotice(ctx, acme.org.ID, intake.NoticeEventDead, "c1"); err != nil || !at.IsZero() {
		t.Fatalf("last sent before any = %v %v", at, err)
	}

	sent := t0.Add(time.Minute)
	if err := s.MarkNoticesSent(ctx, []string{mid.ID, late.ID}, sent); err != nil {
		t.Fatal(err)
	}
	got, err = s.UnsentNotices(ctx, 10)
	if err != nil || !slices.Equal(noticeIDs(got), []string{early.ID, other.ID}) {
		t.Fatalf("unsent after marking = %v %v", noticeIDs(got), err)
	}
	if at, err := s.LastSentNotice(ctx, acme.org.ID, intake.NoticeEventDead, "c1"); err != nil || !at.Equal(sent) {
		t.Fatalf("last sent = %v %v, want %v", at, err, sent)
	}
	// Groups are apart: another subject, topic or org was not sent.
	for _, g := range [][3]string{{acme.org.ID, intake.NoticeEventDead, "c2"}, {acme.org.ID, intake.NoticeMessageDead, "c1"},
		{globex.org.ID, intake.NoticeEventDead, "c1"}} {
		if at, err := s.LastSentNotice(ctx, g[0], g[1], g[2]); err != nil || !at.IsZero() {
			t.Fatalf("last sent of %v = %v %v", g, at, err)
		}
	}
	// Marking again keeps the first time.
	if err := s.MarkNoticesSent(ctx, []string{mid.ID}, sent.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if at, _ := s.LastSentNotice(ctx, acme.org.ID, intake.NoticeEventDead, "c1"); !at.Equal(sent) {
		t.Fatalf("last sent after a second mark = %v, want %v", at, sent)
	}
}

func testSettlementNotices(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	settle := func(body string, st func(c intake.Claim) intake.Settlement) {
		t.Helper()
		f.ingest(t, s, body, t0)
		if _, err := s.SettleMessage(ctx, t0, st(claimOne(t, s, t0))); err != nil {
			t.Fatal(err)
		}
	}
	settle(`{"id":"ok"}`, func(c intake.Claim) intake.Settlement { return processed(c, nil) })
	if got, _ := s.UnsentNotices(ctx, 10); len(got) != 0 {
		t.Fatalf("a processed message left notices %+v", got)
	}
	var dead, forged intake.Claim
	settle(`{"id":"dead"}`, func(c intake.Claim) intake.Settlement {
		dead = c
		return intake.Settlement{MessageID: c.Message.ID, Attempt: c.Attempt, To: intake.MessageDead, Outcome: "error",
			ErrorCode: intake.ErrCodePermanent, ErrorMessage: "no adapter"}
	})
	settle(`{"id":"forged"}`, func(c intake.Claim) intake.Settlement {
		forged = c
		return intake.Settlement{MessageID: c.Message.ID, Attempt: c.Attempt, To: intake.MessageIgnored,
			Outcome: intake.OutcomeSignature, ErrorMessage: "signature: no secret matched"}
	})
	got, err := s.UnsentNotices(ctx, 10)
	// The forged one also opens its connection's issue (see issues.go).
	got = slices.DeleteFunc(got, func(n intake.Notice) bool { return n.Topic == intake.NoticeIssueOpened })
	if err != nil || len(got) != 2 {
		t.Fatalf("notices = %+v %v, want two", got, err)
	}
	for i, want := range []struct {
		topic string
		c     intake.Claim
	}{{intake.NoticeMessageDead, dead}, {intake.NoticeSignatureFailures, forged}} {
		n := slices.IndexFunc(got, func(n intake.Notice) bool { return n.Topic == want.topic })
		if n < 0 {
			t.Fatalf("no %s notice in %+v", want.topic, got)
		}
		g := got[n]
		if g.OrgID != f.org.ID || g.Subject != f.ep.ID || !g.At.Equal(t0) || !containsAll(g.Detail, want.c.Message.ID) {
			t.Fatalf("notice %d = %+v, want %s about endpoint %s naming message %s", i, g, want.topic, f.ep.ID, want.c.Message.ID)
		}
	}
	// A stale settlement leaves none.
	if _, err := s.SettleMessage(ctx, t0, intake.Settlement{MessageID: dead.Message.ID, Attempt: dead.Attempt,
		To: intake.MessageDead, ErrorCode: intake.ErrCodePermanent}); intake.ErrorCode(err) != intake.ESTALE {
		t.Fatalf("second settle: %v, want stale", err)
	}
	if again, _ := s.UnsentNotices(ctx, 10); len(again) != 3 {
		t.Fatalf("a stale settlement left a notice: %d notices", len(again))
	}
}

func noticeIDs(ns []intake.Notice) []string {
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// testSubjectNames: the notifier reads the names of a batch's subjects in
// one call: consumers, connections and endpoints (with their connection),
// deleted ones too; other subjects are left out.
func testSubjectNames(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "crm", intake.Controls{})
	if err := s.Delete(ctx, intake.Scope{}, intake.DeleteConsumer, c.ID, t0); err != nil {
		t.Fatal(err)
	}
	got, err := s.SubjectNames(ctx, []string{c.ID, f.conn.ID, f.ep.ID, intake.NewID(), "storage", f.conn.ID + "/stripe.charge"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]intake.SubjectName{
		c.ID:      {OrgID: f.org.ID, Kind: intake.SubjectConsumer, Name: "crm"},
		f.conn.ID: {OrgID: f.org.ID, Kind: intake.SubjectConnection, Name: "acme"},
		f.ep.ID:   {OrgID: f.org.ID, Kind: intake.SubjectEndpoint, ConnectionID: f.conn.ID, ConnectionName: "acme"},
	}
	if len(got) != len(want) {
		t.Fatalf("names = %+v, want %+v", got, want)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: %+v, want %+v", id, got[id], w)
		}
	}
	if none, err := s.SubjectNames(ctx, nil); err != nil || len(none) != 0 {
		t.Fatalf("no ids: %+v %v", none, err)
	}
}
