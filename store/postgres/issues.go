package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

// Issues (DESIGN §20) are written by the settles, in their transactions
// (queueCallIssues and queueIssueWrites beside the other reads and writes
// of a settle), and read and moved by operators here.

const issueColumns = `i.id::text, i.org_id::text, i.kind, i.status, coalesce(i.consumer_id::text, ''), coalesce(i.connection_id::text, ''),
	i.subject_name, i.cause, i.count, i.events, i.first_seen_at, i.last_seen_at, i.opened_at, i.acknowledged_at, i.resolved_at,
	i.last_error, coalesce(i.sample_event_id::text, ''), coalesce(i.sample_message_id::text, ''), i.updated_at`

func scanIssue(row pgx.Row) (intake.Issue, error) {
	var i intake.Issue
	var first, last, opened, acked, resolved, updated *time.Time
	err := row.Scan(&i.ID, &i.OrgID, &i.Kind, &i.Status, &i.ConsumerID, &i.ConnectionID, &i.SubjectName, &i.Cause, &i.Count, &i.Events,
		&first, &last, &opened, &acked, &resolved, &i.LastError, &i.SampleEventID, &i.SampleMessageID, &updated)
	i.FirstSeenAt, i.LastSeenAt, i.OpenedAt, i.AcknowledgedAt, i.ResolvedAt, i.UpdatedAt =
		fromTS(first), fromTS(last), fromTS(opened), fromTS(acked), fromTS(resolved), fromTS(updated)
	return i, err
}

// queueCallIssues queues the reads the issues of a batch of call results
// need: the consumers' names, their delivery and rule issues (locked with
// lock, behind the lanes' locks), and which of the batch's events those
// hold already.
func queueCallIssues(b *pgx.Batch, consumers, events []string, lock bool, in *intake.RouteSettleRead) {
	in.ConsumerNames, in.IssueItems = map[string]string{}, map[intake.IssueItemKey]bool{}
	queueConsumerNames(b, consumers, in.ConsumerNames)
	q := `SELECT ` + issueColumns + ` FROM issues i WHERE i.consumer_id = ANY($1::uuid[]) AND i.kind IN ('delivery', 'rule') ORDER BY i.id`
	if lock {
		q += ` FOR UPDATE`
	}
	queueRows(b, &in.Issues, scanIssue, q, nonNil(consumers))
	b.Queue(`SELECT ie.issue_id::text, ie.item_id::text FROM issue_events ie
		WHERE ie.issue_id IN (SELECT i.id FROM issues i WHERE i.consumer_id = ANY($1::uuid[]) AND i.kind IN ('delivery', 'rule'))
		  AND ie.item_id = ANY($2::uuid[])`, nonNil(consumers), nonNil(events)).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var k intake.IssueItemKey
			if err := rows.Scan(&k.IssueID, &k.ItemID); err != nil {
				return err
			}
			in.IssueItems[k] = true
		}
		return rows.Err()
	})
}

// queueSettleIssues queues the reads of the names and request issues of
// the settled messages' connections, and of the names and rule issues of
// the fan-outs' consumers.
func queueSettleIssues(b *pgx.Batch, ids, consumers []string, in *intake.SettleRead) {
	in.ConnectionNames, in.ConsumerNames = map[string]string{}, map[string]string{}
	queueConsumerNames(b, consumers, in.ConsumerNames)
	b.Queue(`SELECT c.id::text, c.name FROM connections c WHERE c.id IN (SELECT m.connection_id FROM messages m WHERE m.id = ANY($1::uuid[]))`,
		ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id, name string
			if err := rows.Scan(&id, &name); err != nil {
				return err
			}
			in.ConnectionNames[id] = name
		}
		return rows.Err()
	})
	queueRows(b, &in.Issues, scanIssue, `SELECT `+issueColumns+` FROM issues i
		WHERE i.connection_id IN (SELECT m.connection_id FROM messages m WHERE m.id = ANY($1::uuid[])) AND i.kind = 'request'
		UNION ALL SELECT `+issueColumns+` FROM issues i WHERE i.consumer_id = ANY($2::uuid[]) AND i.kind = 'rule'`, ids, nonNil(consumers))
}

// queueConsumerNames queues the read of consumers' names into names.
func queueConsumerNames(b *pgx.Batch, consumers []string, names map[string]string) {
	b.Queue(`SELECT id::text, name FROM consumers WHERE id = ANY($1::uuid[])`, nonNil(consumers)).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id, name string
			if err := rows.Scan(&id, &name); err != nil {
				return err
			}
			names[id] = name
		}
		return rows.Err()
	})
}

// queueFanOutIssues queues the reads of the names and rule issues of a
// fan-out's consumers.
func queueFanOutIssues(b *pgx.Batch, consumers []string, in *intake.FanOutRead) {
	in.ConsumerNames = map[string]string{}
	queueConsumerNames(b, consumers, in.ConsumerNames)
	queueRows(b, &in.Issues, scanIssue, `SELECT `+issueColumns+` FROM issues i WHERE i.consumer_id = ANY($1::uuid[]) AND i.kind = 'rule'`,
		nonNil(consumers))
}

// queueIssueWrites queues the writes of a settle's issues, their counts
// added (two settles of one subject committing side by side both count),
// and of the items they touched.
func queueIssueWrites(b *pgx.Batch, ws []intake.IssueWrite, items []intake.IssueItem) {
	for _, w := range ws {
		i := w.Issue
		b.Queue(`INSERT INTO issues (id, org_id, kind, status, consumer_id, connection_id, subject_name, cause, count, events,
				first_seen_at, last_seen_at, opened_at, acknowledged_at, resolved_at, last_error, sample_event_id, sample_message_id, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
			ON CONFLICT (id) DO UPDATE SET status = excluded.status, subject_name = excluded.subject_name,
				count = issues.count + excluded.count, events = issues.events + excluded.events,
				last_seen_at = greatest(issues.last_seen_at, excluded.last_seen_at), opened_at = excluded.opened_at,
				acknowledged_at = excluded.acknowledged_at, resolved_at = excluded.resolved_at,
				last_error = CASE WHEN excluded.count > 0 THEN excluded.last_error ELSE issues.last_error END,
				sample_event_id = CASE WHEN excluded.count > 0 THEN excluded.sample_event_id ELSE issues.sample_event_id END,
				sample_message_id = CASE WHEN excluded.count > 0 THEN excluded.sample_message_id ELSE issues.sample_message_id END,
				updated_at = excluded.updated_at`,
			i.ID, i.OrgID, string(i.Kind), string(i.Status), nullID(i.ConsumerID), nullID(i.ConnectionID), text(i.SubjectName), text(i.Cause),
			w.AddCount, w.AddEvents, ts(i.FirstSeenAt), ts(i.LastSeenAt), ts(i.OpenedAt), ts(i.AcknowledgedAt), ts(i.ResolvedAt),
			text(i.LastError), nullID(i.SampleEventID), nullID(i.SampleMessageID), ts(i.UpdatedAt))
	}
	if n := len(items); n > 0 {
		issues, ids, orgs, ats := make([]string, n), make([]string, n), make([]string, n), make([]time.Time, n)
		for k, it := range items {
			issues[k], ids[k], orgs[k], ats[k] = it.IssueID, it.EventID+it.MessageID, it.OrgID, it.At.UTC()
		}
		b.Queue(`INSERT INTO issue_events (issue_id, item_id, org_id, at)
			SELECT x.issue_id, x.item_id, x.org_id, max(x.at) FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::timestamptz[])
			  AS x (issue_id, item_id, org_id, at) GROUP BY 1, 2, 3
			ON CONFLICT (issue_id, item_id) DO UPDATE SET at = greatest(issue_events.at, excluded.at)`, issues, ids, orgs, ats)
	}
}

// ListIssues lists the issues q selects, the last seen first.
func (s *Store) ListIssues(ctx context.Context, sc intake.Scope, q intake.IssueQuery) (intake.Page[intake.Issue], error) {
	p := intake.Page[intake.Issue]{Items: []intake.Issue{}}
	at, after, paged, err := intake.ParseTimedCursor(q.Cursor)
	if err != nil {
		return p, err
	}
	if q.ConsumerID != "" && !validIDs(q.ConsumerID) || q.ConnectionID != "" && !validIDs(q.ConnectionID) {
		return p, nil
	}
	var cursorAt any
	if paged {
		cursorAt = at
	}
	limit := intake.PageLimit(q.Limit)
	var items []intake.Issue
	err = s.readPlanned(ctx, sc, func(b *pgx.Batch) {
		queueRows(b, &items, scanIssue, `SELECT `+issueColumns+` FROM issues i
			WHERE ($1::uuid IS NULL OR i.org_id = $1) AND ($2 = '' OR i.status = $2) AND ($3 = '' OR i.kind = $3)
			  AND ($4::uuid IS NULL OR i.consumer_id = $4) AND ($5::uuid IS NULL OR i.connection_id = $5)
			  AND ($6::timestamptz IS NULL OR (i.last_seen_at, i.id) < ($6, $7::uuid)) AND `+liveSubjects+`
			ORDER BY i.last_seen_at DESC, i.id DESC LIMIT $8`,
			nullID(sc.OrgID), string(q.Status), string(q.Kind), nullID(q.ConsumerID), nullID(q.ConnectionID), cursorAt, nullID(after), limit+1)
	})
	if err != nil {
		return p, err
	}
	if len(items) > limit {
		items, p.NextCursor = items[:limit], intake.IssueCursor(items[limit-1])
	}
	if items != nil {
		p.Items = items
	}
	return p, nil
}

// Issue reads one issue visible in sc.
func (s *Store) Issue(ctx context.Context, sc intake.Scope, id string) (intake.Issue, error) {
	var i intake.Issue
	if !validIDs(id) {
		return i, notFound("issue", id)
	}
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		b.Queue(`SELECT `+issueColumns+` FROM issues i WHERE i.id = $1 AND ($2::uuid IS NULL OR i.org_id = $2)`, id, nullID(sc.OrgID)).
			QueryRow(func(row pgx.Row) error {
				var err error
				i, err = scanIssue(row)
				return err
			})
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return intake.Issue{}, notFound("issue", id)
	}
	return i, err
}

// IssueItems lists an issue's kept events (or messages), the last failed
// first.
func (s *Store) IssueItems(ctx context.Context, sc intake.Scope, id string, q intake.IssueItemsQuery) (intake.Page[intake.IssueItem], error) {
	p := intake.Page[intake.IssueItem]{Items: []intake.IssueItem{}}
	i, err := s.Issue(ctx, sc, id)
	if err != nil {
		return p, err
	}
	at, after, paged, err := intake.ParseTimedCursor(q.Cursor)
	if err != nil {
		return p, err
	}
	var cursorAt any
	if paged {
		cursorAt = at
	}
	kept := `EXISTS (SELECT FROM events e WHERE e.id = ie.item_id)`
	if i.Kind == intake.IssueRequest {
		kept = `EXISTS (SELECT FROM messages m WHERE m.id = ie.item_id)`
	}
	limit := intake.PageLimit(q.Limit)
	var items []intake.IssueItem
	err = s.read(ctx, sc, func(b *pgx.Batch) {
		queueRows(b, &items, func(row pgx.Row) (intake.IssueItem, error) {
			it := intake.IssueItem{IssueID: i.ID, OrgID: i.OrgID}
			var item string
			err := row.Scan(&item, &it.At)
			it.At = it.At.UTC()
			if i.Kind == intake.IssueRequest {
				it.MessageID = item
			} else {
				it.EventID = item
			}
			return it, err
		}, `SELECT ie.item_id::text, ie.at FROM issue_events ie
			WHERE ie.issue_id = $1 AND ($2::timestamptz IS NULL OR (ie.at, ie.item_id) < ($2, $3::uuid)) AND `+kept+`
			ORDER BY ie.at DESC, ie.item_id DESC LIMIT $4`, id, cursorAt, nullID(after), limit+1)
	})
	if err != nil {
		return p, err
	}
	if len(items) > limit {
		items, p.NextCursor = items[:limit], intake.IssueItemCursor(items[limit-1])
	}
	if items != nil {
		p.Items = items
	}
	return p, nil
}

// SetIssueStatus moves an issue by an operator's hand.
func (s *Store) SetIssueStatus(ctx context.Context, sc intake.Scope, id string, to intake.IssueStatus, at time.Time,
	audit ...intake.AuditEntry) (intake.Issue, error) {
	var out intake.Issue
	if !validIDs(id) {
		return out, notFound("issue", id)
	}
	err := s.auditedScoped(ctx, sc, audit, func(tx pgx.Tx) error {
		i, err := scanIssue(tx.QueryRow(ctx, `SELECT `+issueColumns+` FROM issues i WHERE i.id = $1 AND ($2::uuid IS NULL OR i.org_id = $2)
			FOR UPDATE`, id, nullID(sc.OrgID)))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("issue", id)
		}
		if err != nil {
			return err
		}
		if err := intake.CheckIssueStatus(i.Status, to); err != nil || i.Status == to {
			out = i
			return err
		}
		i.Status, i.UpdatedAt = to, at.UTC().Truncate(time.Microsecond)
		switch to {
		case intake.IssueAcknowledged:
			i.AcknowledgedAt = i.UpdatedAt
		case intake.IssueOpen:
			i.AcknowledgedAt = time.Time{}
		}
		out = i
		_, err = tx.Exec(ctx, `UPDATE issues SET status = $1, acknowledged_at = $2, updated_at = $3 WHERE id = $4`,
			string(i.Status), ts(i.AcknowledgedAt), ts(i.UpdatedAt), id)
		return err
	})
	return out, err
}

// liveSubjects leaves out the issues of deleted consumers and connections.
const liveSubjects = `NOT EXISTS (SELECT FROM consumers c WHERE c.id = i.consumer_id AND c.deleted_at IS NOT NULL)
		  AND NOT EXISTS (SELECT FROM connections n WHERE n.id = i.connection_id AND n.deleted_at IS NOT NULL)`

// CountOpenIssues counts the open issues visible in sc.
func (s *Store) CountOpenIssues(ctx context.Context, sc intake.Scope) (int, error) {
	var n int
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		b.Queue(`SELECT count(*) FROM issues i WHERE ($1::uuid IS NULL OR i.org_id = $1) AND i.status = 'open' AND `+liveSubjects, nullID(sc.OrgID)).
			QueryRow(func(row pgx.Row) error { return row.Scan(&n) })
	})
	return n, err
}

// Backlogs reads the consumers late beyond since and the backlog issues
// that are open or acknowledged. Each consumer's oldest waiting route is
// the first entry of routes_due.
func (s *Store) Backlogs(ctx context.Context, since time.Time) (intake.BacklogRead, error) {
	var in intake.BacklogRead
	err := s.read(ctx, intake.Scope{}, func(b *pgx.Batch) {
		queueRows(b, &in.Late, func(row pgx.Row) (intake.ConsumerBacklog, error) {
			var c intake.ConsumerBacklog
			err := row.Scan(&c.OrgID, &c.ConsumerID, &c.Name, &c.OldestAt)
			c.OldestAt = c.OldestAt.UTC()
			return c, err
		}, `SELECT c.org_id::text, c.id::text, c.name, r.oldest FROM consumers c
			CROSS JOIN LATERAL (SELECT r.next_at AS oldest FROM routes r WHERE r.consumer_id = c.id AND r.state = 'waiting'
			        ORDER BY r.next_at LIMIT 1) r
			WHERE c.deleted_at IS NULL AND c.enabled AND r.oldest < $1`, ts(since))
		queueRows(b, &in.Issues, scanIssue, `SELECT `+issueColumns+` FROM issues i WHERE i.kind = 'backlog' AND i.status IN ('open', 'acknowledged')`)
	})
	return in, err
}

// WriteIssues writes issues decided outside a settle, with their notices.
func (s *Store) WriteIssues(ctx context.Context, ws []intake.IssueWrite, notices []intake.Notice) error {
	return s.pipeline(ctx, func(p *pipeTx) error {
		queueIssueWrites(p.b, ws, nil)
		for _, n := range notices {
			queueNotice(p.b, n)
		}
		return nil
	})
}
