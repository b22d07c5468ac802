package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

// searchFlags are what both searches take: the search, its time range and
// a page.
type searchFlags struct {
	Match  string `name:"match" help:"A JSON object the event's data must contain, e.g. '{\"customer\":{\"id\":\"cus_1\"}}': objects match partially, an array holds the elements given."`
	Q      string `name:"q" help:"Words that must all occur, in any case (a word also matches inside a longer one)."`
	Type   string `name:"type" help:"Only of this event type (e.g. stripe.invoice.paid)."`
	State  string `name:"state" help:"Only in this state."`
	Since  string `name:"since" help:"From this time: RFC 3339, or a duration ago (24h)."`
	Until  string `name:"until" help:"Before this time: RFC 3339, or a duration ago (1h)."`
	Limit  int    `name:"limit" help:"Rows per page (default 50, at most 500)."`
	Cursor string `name:"cursor" help:"Continue after the page that printed this cursor."`
}

// query is the search as the list routes take it.
func (f searchFlags) query(now time.Time) (url.Values, error) {
	q := url.Values{}
	setParam(q, "match", f.Match)
	setParam(q, "q", f.Q)
	setParam(q, "type", f.Type)
	setParam(q, "state", f.State)
	for _, t := range []struct{ name, v string }{{"since", f.Since}, {"until", f.Until}} {
		at, err := flagTime(t.name, t.v, now)
		if err != nil {
			return nil, err
		}
		if !at.IsZero() {
			q.Set(t.name, at.Format(time.RFC3339))
		}
	}
	if f.Limit != 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	setParam(q, "cursor", f.Cursor)
	return q, nil
}

// flagTime reads a time flag: RFC 3339, or a duration before now.
func flagTime(name, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(-d).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("--%s: give an RFC 3339 time (2026-03-14T09:30:00Z) or a duration ago (24h)", name)
	}
	return t.UTC(), nil
}

// match is --match as a request body carries it: a JSON object. The
// server judges it; only JSON is checked here, to send it.
func (f searchFlags) match() (json.RawMessage, error) {
	if strings.TrimSpace(f.Match) == "" {
		return nil, nil
	}
	if !json.Valid([]byte(f.Match)) {
		return nil, errors.New(`--match must be a JSON object, like '{"customer":{"id":"cus_1"}}'`)
	}
	return json.RawMessage(f.Match), nil
}

// timeRange is --since and --until as a request body carries them.
func (f searchFlags) timeRange(now time.Time) (since, until time.Time, err error) {
	if since, err = flagTime("since", f.Since, now); err != nil {
		return since, until, err
	}
	until, err = flagTime("until", f.Until, now)
	return since, until, err
}

// EventsSearchCmd finds events, and re-routes them on request.
type EventsSearchCmd struct {
	searchFlags
	Consumer string `name:"consumer" help:"Only events delivered (or attempted) to this consumer id."`
	Reroute  bool   `name:"reroute" help:"Re-route every dead, no_consumer or filtered event the search selects (all pages; --state narrows it), instead of listing."`
	DryRun   bool   `name:"dry-run" help:"With --reroute: print how many events it would re-route and the first of them, and change nothing."`
	bulkFlags
	listFlags
}

// Run searches, or re-routes what the search selects.
func (c *EventsSearchCmd) Run(cl *Client) error {
	if c.Reroute {
		return c.bulk(cl, c.listFlags, bulkAction{
			refused: c.Consumer != "", refusal: "--reroute acts on every event the search selects: drop --consumer, --limit and --cursor",
			path: "/api/v1/events/reroute", done: "re-routed %d events\n", dryRun: c.DryRun, preview: previewEvents("re-route"),
			request: func(match json.RawMessage, since, until time.Time) any {
				return api.RerouteRequest{State: intake.EventState(c.State), Type: c.Type, Since: since, Until: until, Match: match, Q: c.Q,
					DryRun: c.DryRun, Confirm: c.Confirm}
			},
			bulkFlags: c.bulkFlags,
		})
	}
	if c.DryRun {
		return errors.New("--dry-run goes with --reroute: a search alone changes nothing")
	}
	q, err := c.query(time.Now())
	if err != nil {
		return err
	}
	setParam(q, "consumer_id", c.Consumer)
	return printEvents(cl, c.listFlags, q)
}

// MessagesSearchCmd finds messages, and replays them on request.
type MessagesSearchCmd struct {
	searchFlags
	Endpoint string `name:"endpoint" help:"Only messages of this endpoint id."`
	Replay   bool   `name:"replay" help:"Replay every original message the search selects whose body is kept (all pages; past the server's --bulk-max only with --confirm, as a job), instead of listing."`
	DryRun   bool   `name:"dry-run" help:"With --replay: print how many messages it would replay and the first of them, and change nothing."`
	bulkFlags
	listFlags
}

// Run searches, or replays what the search selects.
func (c *MessagesSearchCmd) Run(cl *Client) error {
	if c.Replay {
		return c.bulk(cl, c.listFlags, bulkAction{
			refusal: "--replay acts on every message the search selects: drop --limit and --cursor",
			path:    "/api/v1/messages/replay", done: "replayed %d messages\n", dryRun: c.DryRun, preview: previewMessages("replay"),
			request: func(match json.RawMessage, since, until time.Time) any {
				return api.ReplayRequest{EndpointID: c.Endpoint, State: intake.MessageState(c.State), Type: c.Type,
					Match: match, Q: c.Q, Since: since, Until: until, DryRun: c.DryRun, Confirm: c.Confirm}
			},
			bulkFlags: c.bulkFlags,
		})
	}
	if c.DryRun {
		return errors.New("--dry-run goes with --replay: a search alone changes nothing")
	}
	q, err := c.query(time.Now())
	if err != nil {
		return err
	}
	setParam(q, "endpoint_id", c.Endpoint)
	return printMessages(cl, c.listFlags, q)
}

// bulkAction is what a search does instead of listing: it acts on every
// row the search selects, so it takes no page.
type bulkAction struct {
	refused bool   // a flag of the command's own that it does not take was given
	refusal string // the error for a page, or a flag it does not take
	path    string // the route that performs it
	done    string // what it prints, given how many rows it took
	// dryRun asks the server what it would take; preview prints that.
	dryRun  bool
	preview func(cl *Client, raw []byte) error
	// request is the body posted to path, from the search.
	request func(match json.RawMessage, since, until time.Time) any
	// bulkFlags say how a job past the bulk maximum is printed.
	bulkFlags bulkFlags
}

// bulk performs a on everything the search selects and prints how many
// rows it took. A page (--limit, --cursor) or a flag it does not take is
// refused: dropped silently, it would act on more than was asked.
func (f searchFlags) bulk(cl *Client, lf listFlags, a bulkAction) error {
	if a.refused || f.Limit != 0 || f.Cursor != "" {
		return errors.New(a.refusal)
	}
	match, err := f.match()
	if err != nil {
		return err
	}
	since, until, err := f.timeRange(time.Now())
	if err != nil {
		return err
	}
	raw, err := cl.call(http.MethodPost, a.path, nil, a.request(match, since, until))
	if err != nil {
		return err
	}
	if lf.JSON {
		return cl.printJSON(raw)
	}
	if a.dryRun {
		return a.preview(cl, raw)
	}
	return a.bulkFlags.printBulk(cl, raw, a.done)
}
