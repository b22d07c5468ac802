package control

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// A list's query parameters are read here, once, for every transport: a
// parameter the list does not take is refused (a misspelt filter must not
// quietly list everything), and a search's match and q are parsed by the
// root package's rules.

// CheckParams refuses query parameters a list does not take, and any
// given twice.
func CheckParams(v url.Values, known ...string) error {
	names := make([]string, 0, len(v))
	for name := range v {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(known, name) {
			if len(known) == 0 {
				return intake.Errorf(intake.EINVALID, "unknown query parameter %q: this list takes none", clipParam(name))
			}
			return intake.Errorf(intake.EINVALID, "unknown query parameter %q: this list takes %s", clipParam(name), strings.Join(known, ", "))
		}
		if len(v[name]) > 1 {
			return intake.Errorf(intake.EINVALID, "query parameter %s is given %d times; give it once", name, len(v[name]))
		}
	}
	return nil
}

func clipParam(name string) string {
	if len(name) > 40 {
		return name[:40] + "…"
	}
	return name
}

// ParseSearch reads a search as a person writes it: match, a JSON object
// the data must contain, and q, words that must all occur.
func ParseSearch(match, q string) (intake.Search, error) {
	m, err := intake.ParseMatch(match)
	if err != nil {
		return intake.Search{}, err
	}
	words, err := intake.ParseWords(q)
	if err != nil {
		return intake.Search{}, err
	}
	return intake.Search{Match: m, Words: words}, nil
}

// ParseTime reads a time parameter written in RFC 3339 ("": none).
func ParseTime(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, intake.Errorf(intake.EINVALID, "%s must be an RFC 3339 time, like 2026-03-14T09:30:00Z", name)
	}
	return t.UTC(), nil
}

// Parameters of the event and message lists.
var (
	eventParams   = []string{"state", "type", "consumer_id", "match", "q", "since", "until", "limit", "cursor"}
	messageParams = []string{"endpoint_id", "state", "provider_event_id", "type", "match", "q", "since", "until", "limit", "cursor"}
)

// EventQuery reads the query of an events list (GET /api/v1/events).
func EventQuery(v url.Values) (intake.EventFilter, error) {
	l, err := listQuery(v, eventParams...)
	if err != nil {
		return intake.EventFilter{}, err
	}
	return intake.EventFilter{
		State: intake.EventState(v.Get("state")), Type: v.Get("type"), ConsumerID: v.Get("consumer_id"),
		Search: l.search, Since: l.since, Until: l.until, Limit: l.limit, Cursor: l.cursor,
	}, nil
}

// MessageQuery reads the query of a messages list (GET /api/v1/messages).
func MessageQuery(v url.Values) (intake.MessageFilter, error) {
	l, err := listQuery(v, messageParams...)
	if err != nil {
		return intake.MessageFilter{}, err
	}
	return intake.MessageFilter{
		EndpointID: v.Get("endpoint_id"), State: intake.MessageState(v.Get("state")),
		ProviderEventID: v.Get("provider_event_id"), Type: v.Get("type"),
		Search: l.search, Since: l.since, Until: l.until, Limit: l.limit, Cursor: l.cursor,
	}, nil
}

// listParts is what every searchable list reads alike from its query.
type listParts struct {
	search       intake.Search
	since, until time.Time
	limit        int
	cursor       string
}

// listQuery refuses parameters outside params, then reads the search, the
// time range, the limit and the cursor.
func listQuery(v url.Values, params ...string) (listParts, error) {
	var l listParts
	if err := CheckParams(v, params...); err != nil {
		return l, err
	}
	var err error
	if l.search, err = ParseSearch(v.Get("match"), v.Get("q")); err != nil {
		return l, err
	}
	if l.since, err = ParseTime("since", v.Get("since")); err != nil {
		return l, err
	}
	if l.until, err = ParseTime("until", v.Get("until")); err != nil {
		return l, err
	}
	if l.limit, err = ParseLimit(v.Get("limit")); err != nil {
		return l, err
	}
	l.cursor = v.Get("cursor")
	return l, nil
}

// checkSearchRange refuses a time range that selects nothing by
// construction: a mistake, not a search.
func checkSearchRange(since, until time.Time) error {
	if !since.IsZero() && !until.IsZero() && !since.Before(until) {
		return intake.Errorf(intake.EINVALID, "since must be before until")
	}
	return nil
}

// checkSearch bounds a search that did not come through ParseSearch.
func checkSearch(s intake.Search) error {
	if len(s.Words) > intake.MaxSearchWords {
		return intake.Errorf(intake.EINVALID, "q may hold at most %d words", intake.MaxSearchWords)
	}
	for _, w := range s.Words {
		if w == "" || len(w) > intake.MaxWordBytes || strings.ContainsAny(w, " \t\r\n\x00") {
			return intake.Errorf(intake.EINVALID, "each word of q must be 1 to %d bytes without spaces", intake.MaxWordBytes)
		}
	}
	return nil
}

// describeSearch names what a bulk action selected, for its audit entries:
// each part as the API takes it.
func describeSearch(state, typ, endpointID string, s intake.Search, since, until time.Time) string {
	var parts []string
	add := func(name, v string) {
		if v != "" {
			parts = append(parts, name+"="+v)
		}
	}
	add("state", state)
	add("type", typ)
	add("endpoint_id", endpointID)
	add("match", s.Match.String())
	if len(s.Words) > 0 {
		add("q", strconv.Quote(strings.Join(s.Words, " ")))
	}
	if !since.IsZero() {
		add("since", since.UTC().Format(time.RFC3339))
	}
	if !until.IsZero() {
		add("until", until.UTC().Format(time.RFC3339))
	}
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, " ")
}

// ReplayWhere replays every original message f selects whose body is
// still kept (a replay of one whose body expired would only be dead
// again), each a new message with its own audit entry naming the search,
// and returns how many. A search that selects nothing in particular is
// refused; one that selects more than the bulk maximum is refused before
// anything is replayed unless confirm, and then becomes a job a
// ReplayRunner carries out in paced batches.
func (p *Plane) ReplayWhere(ctx context.Context, c Caller, f intake.MessageFilter, confirm bool) (BulkResult, error) {
	f, total, err := p.checkReplayWhere(ctx, c, f, confirm)
	if err != nil {
		return BulkResult{}, err
	}
	if total > p.budgets.bulkMax {
		j, err := p.startBulkJob(ctx, c, intake.JobReplay, messageSelection(f), total, "messages.replay")
		if err != nil {
			return BulkResult{}, err
		}
		return BulkResult{Job: &j}, nil
	}
	query := describeSearch(string(f.State), f.Type, f.EndpointID, f.Search, f.Since, f.Until)
	if f.ProviderEventID != "" {
		query += fmt.Sprintf(" provider_event_id=%q", f.ProviderEventID)
	}
	n := 0
	for n < p.budgets.bulkMax {
		page, err := p.store.ListMessages(ctx, c.Scope, f)
		if err != nil {
			return BulkResult{Count: n}, err
		}
		for _, m := range page.Items {
			if n >= p.budgets.bulkMax {
				break
			}
			r, err := replay(ctx, p.store, p.clock, m, false, func(r intake.Message) []intake.AuditEntry {
				return []intake.AuditEntry{p.entry(c, m.OrgID, "message.replay", "message", m.ID, "replay=", r.ID, " (search: ", query, ")")}
			})
			if err != nil {
				return BulkResult{Count: n}, err
			}
			if r.ID != "" {
				n++
			}
		}
		if page.NextCursor == "" {
			break
		}
		f.Cursor = page.NextCursor
	}
	return BulkResult{Count: n}, nil
}

// checkReplayWhere checks a bulk replay's search and counts what it
// selects: at most the bulk maximum, or, unless confirm, it is refused. f
// comes back as the replay pages it.
func (p *Plane) checkReplayWhere(ctx context.Context, c Caller, f intake.MessageFilter, confirm bool) (intake.MessageFilter, int, error) {
	if err := c.may(intake.RoleOperator); err != nil {
		return f, 0, err
	}
	f.Originals, f.Limit, f.Cursor = true, 200, ""
	if err := checkMessageFilter(f); err != nil {
		return f, 0, err
	}
	if f.Search.IsZero() && f.Type == "" && f.State == "" && f.EndpointID == "" && f.ProviderEventID == "" && f.Since.IsZero() && f.Until.IsZero() {
		return f, 0, intake.Errorf(intake.EINVALID, "a bulk replay needs a search: match, q, type, state, endpoint_id, since or until")
	}
	total, err := budgeted(ctx, p, c, func(ctx context.Context) (int, error) { return p.store.CountMessages(ctx, c.Scope, f) })
	if err != nil {
		return f, 0, err
	}
	if total > p.budgets.bulkMax && !confirm {
		return f, 0, intake.Errorf(intake.EINVALID, "this search selects %d messages; a bulk replay takes at most %d at once: %s",
			total, p.budgets.bulkMax, confirmHint)
	}
	return f, total, nil
}

// PreviewReplayWhere is ReplayWhere's dry run: how many original messages
// the search selects (a replay skips those whose body has expired) and the
// first of them; nothing changes.
func (p *Plane) PreviewReplayWhere(ctx context.Context, c Caller, f intake.MessageFilter) (Preview[intake.Message], error) {
	f, total, err := p.checkReplayWhere(ctx, c, f, true)
	if err != nil {
		return Preview[intake.Message]{}, err
	}
	f.Limit = PreviewItems
	page, err := p.store.ListMessages(ctx, c.Scope, f)
	return Preview[intake.Message]{Count: total, Items: page.Items}, err
}
