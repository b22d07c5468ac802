package sweeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/sweeper"
)

// backlogStore holds issues in memory and reports one consumer late while
// late is set.
type backlogStore struct {
	intake.Issues
	late   bool
	since  time.Time
	issues map[string]intake.Issue
	topics []string
}

func (s *backlogStore) Backlogs(_ context.Context, since time.Time) (intake.BacklogRead, error) {
	s.since = since
	var in intake.BacklogRead
	if s.late {
		in.Late = []intake.ConsumerBacklog{{OrgID: "org", ConsumerID: "c1", Name: "billing", OldestAt: since.Add(-time.Minute)}}
	}
	for _, i := range s.issues {
		if i.Status == intake.IssueOpen || i.Status == intake.IssueAcknowledged {
			in.Issues = append(in.Issues, i)
		}
	}
	return in, nil
}

func (s *backlogStore) WriteIssues(_ context.Context, ws []intake.IssueWrite, ns []intake.Notice) error {
	for _, w := range ws {
		s.issues[w.Issue.ID] = w.Issue
	}
	for _, n := range ns {
		s.topics = append(s.topics, n.Topic)
	}
	return nil
}

func TestBacklogWatchOpensTheIssueOfALateConsumerOnceAndResolvesIt(t *testing.T) {
	ctx := context.Background()
	c := testkit.NewClock(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	st := &backlogStore{late: true, issues: map[string]intake.Issue{}}
	w := sweeper.NewBacklogWatch(sweeper.BacklogConfig{Store: st, Clock: c, Age: 10 * time.Minute})
	for range 2 {
		if err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Minute)
	}
	if !st.since.Equal(c.Now().Add(-time.Minute).Add(-10 * time.Minute)) {
		t.Fatalf("read late since %v, want the age before now", st.since)
	}
	id := intake.IssueID("org", intake.IssueBacklog, "c1", intake.CauseBacklog)
	if i := st.issues[id]; len(st.issues) != 1 || i.Status != intake.IssueOpen || i.Count != 1 || i.SubjectName != "billing" {
		t.Fatalf("issues %+v", st.issues)
	}
	st.late = false
	if err := w.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if i := st.issues[id]; i.Status != intake.IssueResolved || !i.ResolvedAt.Equal(c.Now()) {
		t.Fatalf("issue %+v, want resolved once the consumer caught up", i)
	}
	if len(st.topics) != 2 || st.topics[0] != intake.NoticeIssueOpened || st.topics[1] != intake.NoticeIssueResolved {
		t.Fatalf("notices %v", st.topics)
	}
}
