package sqlite

import (
	"context"
	"time"

	"github.com/intakehq/intake"
)

// SummarizeMessages counts a window's originals by hour and state in one
// GROUP BY that messages_received_state answers alone, and the live
// messages from the small messages_live index.
func (s *Store) SummarizeMessages(ctx context.Context, sc intake.Scope, q intake.SummaryQuery) (intake.MessageSummary, error) {
	if q.Hours <= 0 || q.Hours > intake.MaxSummaryHours {
		return intake.MessageSummary{}, intake.Errorf(intake.EINVALID, "a summary spans 1 to %d hours", intake.MaxSummaryHours)
	}
	out := intake.MessageSummary{Hours: make([]map[intake.MessageState]int, q.Hours), Live: map[intake.MessageState]int{}}
	for i := range out.Hours {
		out.Hours[i] = map[intake.MessageState]int{}
	}
	since := ts(q.Since)
	rows, err := s.read.QueryContext(ctx, `SELECT (received_at - ?1) / ?2, state, count(*) FROM messages INDEXED BY messages_received_state
		WHERE received_at >= ?1 AND received_at < ?3 AND (?4 = '' OR org_id = ?4) AND replay_of = ''
		GROUP BY 1, 2`, since, time.Hour.Microseconds(), ts(q.Since.Add(time.Duration(q.Hours)*time.Hour)), sc.OrgID)
	if err != nil {
		return out, unavailable(err)
	}
	defer rows.Close()
	for rows.Next() {
		var h, n int
		var state intake.MessageState
		if err := rows.Scan(&h, &state, &n); err != nil {
			return out, unavailable(err)
		}
		out.Hours[h][state] = n
	}
	if err := rows.Err(); err != nil {
		return out, unavailable(err)
	}
	rows.Close()

	rows, err = s.read.QueryContext(ctx, `SELECT state, count(*), count(*) FILTER (WHERE state = 'queued' AND received_at < ?2)
		FROM messages INDEXED BY messages_live
		WHERE state IN ('queued', 'processing', 'failed') AND (?1 = '' OR org_id = ?1) GROUP BY state`, sc.OrgID, ts(q.QueuedBefore))
	if err != nil {
		return out, unavailable(err)
	}
	defer rows.Close()
	for rows.Next() {
		var state intake.MessageState
		var n, before int
		if err := rows.Scan(&state, &n, &before); err != nil {
			return out, unavailable(err)
		}
		out.Live[state] = n
		out.QueuedBefore += before
	}
	return out, unavailable(rows.Err())
}
