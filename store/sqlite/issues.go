package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/intakehq/intake"
)

// Issues (DESIGN §20) are written by the settles, in their transactions
// (readCallIssues and writeIssues beside the other reads and writes of a
// settle), and read and moved by operators here.

const issueColumns = `id, org_id, kind, status, consumer_id, connection_id, subject_name, cause, count, events, first_seen_at,
	last_seen_at, opened_at, acknowledged_at, resolved_at, last_error, sample_event_id, sample_message_id, updated_at`

func scanIssue(row interface{ Scan(...any) error }) (intake.Issue, error) {
	var i intake.Issue
	var first, last, opened, acked, resolved, updated sql.NullInt64
	err := row.Scan(&i.ID, &i.OrgID, &i.Kind, &i.Status, &i.ConsumerID, &i.ConnectionID, &i.SubjectName, &i.Cause, &i.Count, &i.Events,
		&first, &last, &opened, &acked, &resolved, &i.LastError, &i.SampleEventID, &i.SampleMessageID, &updated)
	i.FirstSeenAt, i.LastSeenAt, i.OpenedAt, i.AcknowledgedAt, i.ResolvedAt, i.UpdatedAt =
		fromTS(first), fromTS(last), fromTS(opened), fromTS(acked), fromTS(resolved), fromTS(updated)
	return i, err
}

// queryIssues reads the issues q returns, with args.
func queryIssues(ctx context.Context, db interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, q string, args ...any) ([]intake.Issue, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []intake.Issue
	for rows.Next() {
		i, err := scanIssue(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, i)
	}
	return out, rows.Err()
}

func jsonList(ss []string) string {
	b, _ := json.Marshal(nonNil(ss))
	return string(b)
}

// readCallIssues reads what the issues of a batch of call results need:
// the consumers' names, their delivery and rule issues, and which of the
// batch's events those hold already.
func readCallIssues(ctx context.Context, tx *wtx, consumers, events []string, in *intake.RouteSettleRead) error {
	in.IssueItems = map[intake.IssueItemKey]bool{}
	var err error
	if in.ConsumerNames, err = consumerNames(ctx, tx, consumers); err != nil {
		return err
	}
	in.Issues, err = queryIssues(ctx, tx, `SELECT `+issueColumns+` FROM issues
		WHERE consumer_id IN (SELECT value FROM json_each(?)) AND kind IN ('delivery', 'rule')`, jsonList(consumers))
	if err != nil || len(in.Issues) == 0 {
		return err
	}
	ids := make([]string, len(in.Issues))
	for i, is := range in.Issues {
		ids[i] = is.ID
	}
	rows, err := tx.QueryContext(ctx, `SELECT issue_id, item_id FROM issue_events
		WHERE issue_id IN (SELECT value FROM json_each(?1)) AND item_id IN (SELECT value FROM json_each(?2))`, jsonList(ids), jsonList(events))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k intake.IssueItemKey
		if err := rows.Scan(&k.IssueID, &k.ItemID); err != nil {
			return err
		}
		in.IssueItems[k] = true
	}
	return rows.Err()
}

// readSettleIssues reads the names and request issues of the settled
// messages' connections, and the names and rule issues of the fan-outs'
// consumers.
func readSettleIssues(ctx context.Context, tx *wtx, consumers []string, in *intake.SettleRead) error {
	in.ConnectionNames = map[string]string{}
	var err error
	if in.ConsumerNames, err = consumerNames(ctx, tx, consumers); err != nil {
		return err
	}
	var conns []string
	for _, m := range in.Messages {
		if _, ok := in.ConnectionNames[m.ConnectionID]; !ok {
			in.ConnectionNames[m.ConnectionID] = ""
			conns = append(conns, m.ConnectionID)
		}
	}
	if err := query(ctx, tx, `SELECT id, name FROM connections WHERE id IN (SELECT value FROM json_each(?))`, conns, func(rows *sql.Rows) error {
		var id, name string
		err := rows.Scan(&id, &name)
		in.ConnectionNames[id] = name
		return err
	}); err != nil {
		return err
	}
	in.Issues, err = queryIssues(ctx, tx, `SELECT `+issueColumns+` FROM issues
		WHERE connection_id IN (SELECT value FROM json_each(?1)) AND kind = 'request'
		UNION ALL SELECT `+issueColumns+` FROM issues WHERE consumer_id IN (SELECT value FROM json_each(?2)) AND kind = 'rule'`,
		jsonList(conns), jsonList(consumers))
	return err
}

// consumerNames reads the names of consumers, for their issues.
func consumerNames(ctx context.Context, tx *wtx, consumers []string) (map[string]string, error) {
	names := map[string]string{}
	err := query(ctx, tx, `SELECT id, name FROM consumers WHERE id IN (SELECT value FROM json_each(?))`, consumers, func(rows *sql.Rows) error {
		var id, name string
		err := rows.Scan(&id, &name)
		names[id] = name
		return err
	})
	return names, err
}

// readFanOutIssues reads the names and rule issues of a fan-out's
// consumers.
func readFanOutIssues(ctx context.Context, tx *wtx, consumers []string, in *intake.FanOutRead) error {
	var err error
	if in.ConsumerNames, err = consumerNames(ctx, tx, consumers); err != nil {
		return err
	}
	in.Issues, err = queryIssues(ctx, tx, `SELECT `+issueColumns+` FROM issues
		WHERE consumer_id IN (SELECT value FROM json_each(?)) AND kind = 'rule'`, jsonList(consumers))
	return err
}

const (
	// Counts are added: the decision's are what the settle adds.
	putIssuesSQL = `INSERT INTO issues (` + issueColumns + `)
		SELECT x.value->>0, x.value->>1, x.value->>2, x.value->>3, x.value->>4, x.value->>5, x.value->>6, x.value->>7, x.value->>8,
		       x.value->>9, x.value->>10, x.value->>11, x.value->>12, x.value->>13, x.value->>14, x.value->>15, x.value->>16,
		       x.value->>17, x.value->>18
		  FROM json_each(?) x WHERE true
		ON CONFLICT (id) DO UPDATE SET status = excluded.status, subject_name = excluded.subject_name,
			count = issues.count + excluded.count, events = issues.events + excluded.events,
			last_seen_at = max(issues.last_seen_at, excluded.last_seen_at), opened_at = excluded.opened_at,
			acknowledged_at = excluded.acknowledged_at, resolved_at = excluded.resolved_at,
			last_error = CASE WHEN excluded.count > 0 THEN excluded.last_error ELSE issues.last_error END,
			sample_event_id = CASE WHEN excluded.count > 0 THEN excluded.sample_event_id ELSE issues.sample_event_id END,
			sample_message_id = CASE WHEN excluded.count > 0 THEN excluded.sample_message_id ELSE issues.sample_message_id END,
			updated_at = excluded.updated_at`
	putIssueItemsSQL = `INSERT INTO issue_events (issue_id, item_id, org_id, at)
		SELECT x.value->>0, x.value->>1, x.value->>2, x.value->>3 FROM json_each(?) x WHERE true
		ON CONFLICT (issue_id, item_id) DO UPDATE SET at = max(issue_events.at, excluded.at)`
)

// writeIssues writes a settle's issues and the items they touched.
func writeIssues(ctx context.Context, tx *wtx, ws []intake.IssueWrite, items []intake.IssueItem) error {
	rows := make([][]any, 0, len(ws))
	for _, w := range ws {
		i := w.Issue
		rows = append(rows, []any{i.ID, i.OrgID, i.Kind, i.Status, i.ConsumerID, i.ConnectionID, i.SubjectName, i.Cause, w.AddCount,
			w.AddEvents, ts(i.FirstSeenAt), ts(i.LastSeenAt), ts(i.OpenedAt), ts(i.AcknowledgedAt), ts(i.ResolvedAt), i.LastError,
			i.SampleEventID, i.SampleMessageID, ts(i.UpdatedAt)})
	}
	if err := exec(ctx, tx, putIssuesSQL, rows); err != nil {
		return err
	}
	rows = rows[:0]
	for _, it := range items {
		rows = append(rows, []any{it.IssueID, it.EventID + it.MessageID, it.OrgID, ts(it.At)})
	}
	return exec(ctx, tx, putIssueItemsSQL, rows)
}

// ListIssues lists the issues q selects, the last seen first.
func (s *Store) ListIssues(ctx context.Context, sc intake.Scope, q intake.IssueQuery) (intake.Page[intake.Issue], error) {
	limit := intake.PageLimit(q.Limit)
	at, after, paged, err := intake.ParseTimedCursor(q.Cursor)
	if err != nil {
		return intake.Page[intake.Issue]{}, err
	}
	var cursorAt any
	if paged {
		cursorAt = at.UnixMicro()
	}
	items, err := queryIssues(ctx, s.reader(ctx), `SELECT `+issueColumns+` FROM issues
		WHERE (?1 = '' OR org_id = ?1) AND (?2 = '' OR status = ?2) AND (?3 = '' OR kind = ?3) AND (?4 = '' OR consumer_id = ?4)
		  AND (?5 = '' OR connection_id = ?5) AND (?6 IS NULL OR last_seen_at < ?6 OR (last_seen_at = ?6 AND id < ?7))
		  AND `+liveSubjects+`
		ORDER BY last_seen_at DESC, id DESC LIMIT ?8`,
		sc.OrgID, string(q.Status), string(q.Kind), q.ConsumerID, q.ConnectionID, cursorAt, after, limit+1)
	if err != nil {
		return intake.Page[intake.Issue]{}, err
	}
	p := intake.Page[intake.Issue]{Items: items}
	if len(items) > limit {
		p.Items, p.NextCursor = items[:limit], intake.IssueCursor(items[limit-1])
	}
	if p.Items == nil {
		p.Items = []intake.Issue{}
	}
	return p, nil
}

// Issue reads one issue visible in sc.
func (s *Store) Issue(ctx context.Context, sc intake.Scope, id string) (intake.Issue, error) {
	i, err := scanIssue(s.reader(ctx).QueryRowContext(ctx, `SELECT `+issueColumns+` FROM issues WHERE id = ?1 AND (?2 = '' OR org_id = ?2)`,
		id, sc.OrgID))
	return i, issueNotFound(err, id)
}

// IssueItems lists an issue's kept events (or messages), the last failed
// first.
func (s *Store) IssueItems(ctx context.Context, sc intake.Scope, id string, q intake.IssueItemsQuery) (intake.Page[intake.IssueItem], error) {
	var p intake.Page[intake.IssueItem]
	i, err := s.Issue(ctx, sc, id)
	if err != nil {
		return p, err
	}
	limit := intake.PageLimit(q.Limit)
	at, after, paged, err := intake.ParseTimedCursor(q.Cursor)
	if err != nil {
		return p, err
	}
	var cursorAt any
	if paged {
		cursorAt = at.UnixMicro()
	}
	kept := `EXISTS (SELECT 1 FROM events e WHERE e.id = ie.item_id)`
	if i.Kind == intake.IssueRequest {
		kept = `EXISTS (SELECT 1 FROM messages m WHERE m.id = ie.item_id)`
	}
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT ie.item_id, ie.at FROM issue_events ie
		WHERE ie.issue_id = ?1 AND (?2 IS NULL OR ie.at < ?2 OR (ie.at = ?2 AND ie.item_id < ?3)) AND `+kept+`
		ORDER BY ie.at DESC, ie.item_id DESC LIMIT ?4`, id, cursorAt, after, limit+1)
	if err != nil {
		return p, err
	}
	defer rows.Close()
	for rows.Next() {
		it := intake.IssueItem{IssueID: i.ID, OrgID: i.OrgID}
		var item string
		var at sql.NullInt64
		if err := rows.Scan(&item, &at); err != nil {
			return p, err
		}
		it.At = fromTS(at)
		if i.Kind == intake.IssueRequest {
			it.MessageID = item
		} else {
			it.EventID = item
		}
		p.Items = append(p.Items, it)
	}
	if len(p.Items) > limit {
		p.Items, p.NextCursor = p.Items[:limit], intake.IssueItemCursor(p.Items[limit-1])
	}
	if p.Items == nil {
		p.Items = []intake.IssueItem{}
	}
	return p, rows.Err()
}

func issueNotFound(err error, id string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("issue", id)
	}
	return err
}

// SetIssueStatus moves an issue by an operator's hand.
func (s *Store) SetIssueStatus(ctx context.Context, sc intake.Scope, id string, to intake.IssueStatus, at time.Time,
	audit ...intake.AuditEntry) (intake.Issue, error) {
	var out intake.Issue
	err := s.audited(ctx, audit, func(tx *wtx) error {
		i, err := scanIssue(tx.QueryRowContext(ctx, `SELECT `+issueColumns+` FROM issues WHERE id = ?1 AND (?2 = '' OR org_id = ?2)`, id, sc.OrgID))
		if err != nil {
			return issueNotFound(err, id)
		}
		if err := intake.CheckIssueStatus(i.Status, to); err != nil || i.Status == to {
			out = i
			return err
		}
		i.Status, i.UpdatedAt = to, at.UTC()
		switch to {
		case intake.IssueAcknowledged:
			i.AcknowledgedAt = at.UTC()
		case intake.IssueOpen:
			i.AcknowledgedAt = time.Time{}
		}
		out = i
		_, err = tx.ExecContext(ctx, `UPDATE issues SET status = ?, acknowledged_at = ?, updated_at = ? WHERE id = ?`,
			i.Status, ts(i.AcknowledgedAt), ts(i.UpdatedAt), id)
		return err
	})
	return out, err
}

// liveSubjects leaves out the issues of deleted consumers and connections.
const liveSubjects = `NOT EXISTS (SELECT 1 FROM consumers c WHERE c.id = issues.consumer_id AND c.deleted_at IS NOT NULL)
		  AND NOT EXISTS (SELECT 1 FROM connections n WHERE n.id = issues.connection_id AND n.deleted_at IS NOT NULL)`

// CountOpenIssues counts the open issues visible in sc.
func (s *Store) CountOpenIssues(ctx context.Context, sc intake.Scope) (int, error) {
	var n int
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT count(*) FROM issues WHERE (?1 = '' OR org_id = ?1) AND status = 'open'
		  AND `+liveSubjects,
		sc.OrgID).Scan(&n)
	return n, err
}

// Backlogs reads the consumers late beyond since and the backlog issues
// that are open or acknowledged. Each consumer's oldest waiting route is
// the first entry of routes_due.
func (s *Store) Backlogs(ctx context.Context, since time.Time) (intake.BacklogRead, error) {
	var in intake.BacklogRead
	rows, err := s.read.QueryContext(ctx, `SELECT org_id, id, name, oldest FROM (
			SELECT c.org_id, c.id, c.name, (SELECT min(r.next_at) FROM routes r WHERE r.consumer_id = c.id AND r.state = 'waiting') AS oldest
			  FROM consumers c WHERE c.deleted_at IS NULL AND c.enabled)
		WHERE oldest < ?`, ts(since))
	if err != nil {
		return in, err
	}
	defer rows.Close()
	for rows.Next() {
		var b intake.ConsumerBacklog
		var oldest sql.NullInt64
		if err := rows.Scan(&b.OrgID, &b.ConsumerID, &b.Name, &oldest); err != nil {
			return in, err
		}
		b.OldestAt = fromTS(oldest)
		in.Late = append(in.Late, b)
	}
	if err := rows.Err(); err != nil {
		return in, err
	}
	in.Issues, err = queryIssues(ctx, s.read, `SELECT `+issueColumns+` FROM issues WHERE kind = 'backlog' AND status IN ('open', 'acknowledged')`)
	return in, err
}

// WriteIssues writes issues decided outside a settle, with their notices.
func (s *Store) WriteIssues(ctx context.Context, ws []intake.IssueWrite, notices []intake.Notice) error {
	return s.tx(ctx, func(tx *wtx) error {
		if err := writeIssues(ctx, tx, ws, nil); err != nil {
			return err
		}
		return insertNotices(ctx, tx, notices)
	})
}
