package notify_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/notify"
)

// countingNames counts the notifier's reads of subject names.
type countingNames struct {
	intake.Notifications
	reads atomic.Int32
}

func (c *countingNames) SubjectNames(ctx context.Context, ids []string) (map[string]intake.SubjectName, error) {
	c.reads.Add(1)
	return c.Notifications.SubjectNames(ctx, ids)
}

// Notifications name consumers, endpoints and connections by their names
// with the id after, in the signed JSON and in Slack's text; the names of
// one poll's notifications are read at once; another org's consumer id
// lends no name.
func TestNotificationsNameConsumersAndConnectionsByNameWithTheIdAfter(t *testing.T) {
	e := newEnv(t, delivery.Policy{})
	ctx := t.Context()
	cons := intake.Consumer{ID: intake.NewID(), OrgID: e.org.ID, Name: "crm <prod>", App: "crm", URL: "http://127.0.0.1:9/crm",
		EventTypes: []string{"*"}, Enabled: true, SealedSecret: []byte("s"), CreatedAt: t0}
	other := e.newOrg("globex")
	theirs := cons
	theirs.ID, theirs.OrgID, theirs.Name = intake.NewID(), other.ID, "their-secret-name"
	for _, c := range []intake.Consumer{cons, theirs} {
		if err := e.store.CreateConsumer(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	named := &countingNames{Notifications: e.store}
	n := notify.New(notify.Config{Store: named, Sealer: e.sealer, Clock: e.clock, Metrics: e.m,
		Sender: delivery.NewSender(delivery.Options{Policy: delivery.Policy{}})})
	url, slack := newReceiver(t), newReceiver(t)
	e.subscribe(e.org, url.URL, slack.URL, intake.NoticeConsumerTripped, intake.NoticeMessageDead, intake.NoticeSchemaChanged)
	e.notice(e.org, intake.NoticeConsumerTripped, cons.ID, "tripped")
	e.notice(e.org, intake.NoticeConsumerTripped, theirs.ID, "tripped")
	e.notice(e.org, intake.NoticeMessageDead, e.ep.ID, "dead")
	e.notice(e.org, intake.NoticeSchemaChanged, e.conn.ID+"/stripe.charge.paid", "drift")
	if err := n.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	n.Wait()
	if got := named.reads.Load(); got != 1 {
		t.Fatalf("%d reads of names for one poll, want 1", got)
	}

	bySubject := map[string]notify.Notification{}
	for _, c := range url.got() {
		var got notify.Notification
		if err := json.Unmarshal(c.body, &got); err != nil {
			t.Fatal(err)
		}
		bySubject[got.Subject] = got
	}
	schema := e.conn.ID + "/stripe.charge.paid"
	want := map[string]notify.Notification{
		cons.ID:   {SubjectKind: "consumer", SubjectName: "crm <prod>"},
		theirs.ID: {},
		e.ep.ID:   {SubjectKind: "endpoint", ConnectionID: e.conn.ID, ConnectionName: "acme"},
		schema:    {SubjectKind: "connection", ConnectionID: e.conn.ID, ConnectionName: "acme"},
	}
	for subject, w := range want {
		got, ok := bySubject[subject]
		if !ok || got.SubjectKind != w.SubjectKind || got.SubjectName != w.SubjectName || got.ConnectionID != w.ConnectionID ||
			got.ConnectionName != w.ConnectionName {
			t.Errorf("%s: %+v, want the names of %+v", subject, got, w)
		}
	}

	var texts []string
	for _, c := range slack.got() {
		var msg map[string]string
		json.Unmarshal(c.body, &msg)
		texts = append(texts, msg["text"])
	}
	all := strings.Join(texts, "\n---\n")
	for _, line := range []string{
		`consumer "crm &lt;prod&gt;" (` + cons.ID + `)`,
		"consumer " + theirs.ID + " (org",
		"endpoint " + e.ep.ID + ` of connection "acme" (` + e.conn.ID + `)`,
		`event type stripe.charge.paid of connection "acme" (` + e.conn.ID + `)`,
	} {
		if !strings.Contains(all, line) {
			t.Errorf("slack says no %q:\n%s", line, all)
		}
	}
	if strings.Contains(all, "their-secret-name") {
		t.Error("another org's consumer name reached this org's Slack")
	}
}
