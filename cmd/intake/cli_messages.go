package main

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

// MessagesCmd inspects received messages.
type MessagesCmd struct {
	List   MessagesListCmd   `cmd:"" help:"List messages, newest first."`
	Search MessagesSearchCmd `cmd:"" help:"Find messages by their events' data (--match), words in their raw bodies (--q), type and time; --replay replays them."`
	Show   MessagesShowCmd   `cmd:"" help:"Show one message (credential headers hidden)."`
	Body   MessagesBodyCmd   `cmd:"" help:"Write a message's raw body, exactly as received, to stdout."`
}

// MessagesListCmd lists messages.
type MessagesListCmd struct {
	Endpoint string `name:"endpoint" help:"Only messages of this endpoint id."`
	State    string `name:"state" help:"Only messages in this state (queued, processing, processed, ignored, failed, dead)."`
	// ProviderEventID finds what a provider's dashboard names.
	ProviderEventID string `name:"provider-event-id" help:"Only messages with this provider event id, as the provider's dashboard shows it (evt_…)."`
	Limit           int    `name:"limit" help:"Messages per page (default 50, at most 500)."`
	Cursor          string `name:"cursor" help:"Continue after the page that printed this cursor."`
	listFlags
}

// Run lists the messages.
func (c *MessagesListCmd) Run(cl *Client) error {
	q := url.Values{}
	setParam(q, "endpoint_id", c.Endpoint)
	setParam(q, "state", c.State)
	setParam(q, "provider_event_id", c.ProviderEventID)
	if c.Limit != 0 {
		q.Set("limit", strconv.Itoa(c.Limit))
	}
	setParam(q, "cursor", c.Cursor)
	return printMessages(cl, c.listFlags, q)
}

// printMessages prints a page of the messages q selects, as a table.
func printMessages(cl *Client, f listFlags, q url.Values) error {
	var names names
	if !f.JSON {
		var err error
		if names, err = endpointNames(cl); err != nil {
			return err
		}
	}
	return printList(cl, f, "/api/v1/messages", q, messageColumns, names.messageRow)
}

var messageColumns = []string{"ID", "RECEIVED", "METHOD", "STATE", "ATTEMPT", "OUTCOME", "ERROR", "CONNECTION", "ENDPOINT"}

// messageRow is a message as lists print it, its connection and endpoint
// by name.
func (n names) messageRow(m api.Message) []string {
	return []string{m.ID, timeCell(m.ReceivedAt), m.Method, m.State,
		intake.AttemptOf(m.Attempt, m.MaxAttempts),
		cell(m.Outcome), cell(clip(cmp.Or(m.ErrorMessage, m.ErrorCode), 60)),
		cmp.Or(n.connections[m.ConnectionID], m.ConnectionID), cmp.Or(n.endpoints[m.EndpointID], m.EndpointID)}
}

// names are what a person calls the connections and endpoints the token
// sees; an unnamed endpoint goes by its id.
type names struct {
	connections map[string]string
	endpoints   map[string]string
}

func endpointNames(cl *Client) (names, error) {
	n := names{connections: map[string]string{}, endpoints: map[string]string{}}
	conns, err := listAll[api.Connection](cl, "/api/v1/connections")
	if err != nil {
		return n, err
	}
	for _, c := range conns {
		n.connections[c.ID] = c.Name
	}
	eps, err := listAll[api.Endpoint](cl, "/api/v1/endpoints")
	if err != nil {
		return n, err
	}
	for _, e := range eps {
		n.endpoints[e.ID] = e.Name
	}
	return n, nil
}

// listAll reads every page of a list.
func listAll[T any](cl *Client, path string) ([]T, error) {
	var all []T
	q := url.Values{}
	for {
		var page api.List[T]
		if _, err := cl.get(path, q, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			return all, nil
		}
		q.Set("cursor", page.NextCursor)
	}
}

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// MessagesShowCmd shows one message.
type MessagesShowCmd struct {
	outputFlags
	ID string `arg:"" help:"Message id."`
}

// Run shows the message.
func (c *MessagesShowCmd) Run(cl *Client) error {
	return cl.show(c.outputFlags, idPath("/api/v1/messages", c.ID))
}

// MessagesBodyCmd writes a message's raw body.
type MessagesBodyCmd struct {
	ID string `arg:"" help:"Message id."`
}

// Run writes the body.
func (c *MessagesBodyCmd) Run(cl *Client) error {
	body, err := cl.call(http.MethodGet, idPath("/api/v1/messages", c.ID, "/body"), nil, nil)
	if err != nil {
		return err
	}
	_, err = cl.stdout().Write(body)
	return err
}

// EventsCmd inspects interpreted events.
type EventsCmd struct {
	List      EventsListCmd      `cmd:"" help:"List events, newest first."`
	Search    EventsSearchCmd    `cmd:"" help:"Find events by their data (--match, --q), type, state and time; --reroute routes the re-routable ones again."`
	Show      EventsShowCmd      `cmd:"" help:"Show one event, its delivery attempts and what the consumer answered to each."`
	Unclaimed EventsUnclaimedCmd `cmd:"" help:"List events no consumer wanted, across orgs (staff token)."`
	Reroute   EventsRerouteCmd   `cmd:"" help:"Route dead or no_consumer events again: one by id, or all that match the filters."`
	Retry     EventsRetryCmd     `cmd:"" help:"Retry now: the event's routes waiting for a later attempt, or held, become due now (no attempt spent; a tripped consumer gets its probe now)."`
}

// EventsListCmd lists events.
type EventsListCmd struct {
	State    string `name:"state" help:"Only events in this state (pending, delivered, retrying, dead, no_consumer)."`
	Type     string `name:"type" help:"Only events of this type (e.g. stripe.invoice.paid)."`
	Consumer string `name:"consumer" help:"Only events delivered (or attempted) to this consumer id."`
	Limit    int    `name:"limit" help:"Events per page (default 50, at most 500)."`
	Cursor   string `name:"cursor" help:"Continue after the page that printed this cursor."`
	listFlags
}

// Run lists the events.
func (c *EventsListCmd) Run(cl *Client) error {
	q := url.Values{}
	setParam(q, "state", c.State)
	setParam(q, "type", c.Type)
	setParam(q, "consumer_id", c.Consumer)
	if c.Limit != 0 {
		q.Set("limit", strconv.Itoa(c.Limit))
	}
	setParam(q, "cursor", c.Cursor)
	return printEvents(cl, c.listFlags, q)
}

// printEvents prints a page of the events q selects, as a table; dead
// events one row per consumer whose attempts they spent.
func printEvents(cl *Client, f listFlags, q url.Values) error {
	if q.Get("state") == string(intake.EventDead) {
		return printDeadEvents(cl, f, q)
	}
	return printList(cl, f, "/api/v1/events", q, eventColumns, eventRow)
}

var eventColumns = []string{"ID", "OCCURRED", "TYPE", "KIND", "STATE", "ATTEMPT", "MESSAGE"}

// eventRow is an event as lists print it.
func eventRow(e api.Event) []string {
	return []string{e.ID, timeCell(e.OccurredAt), e.Type, e.Kind, e.State,
		intake.AttemptOf(e.Attempt, e.MaxAttempts), e.MessageID}
}

// printDeadEvents lists dead events one row per consumer whose attempts an
// event spent: its name, the attempts of its own limit, and its last error.
func printDeadEvents(cl *Client, f listFlags, q url.Values) error {
	var list api.List[api.Event]
	raw, err := cl.get("/api/v1/events", q, &list)
	if err != nil {
		return err
	}
	if f.JSON {
		return cl.printJSON(raw)
	}
	var rows [][]string
	for _, e := range list.Items {
		for _, r := range e.DeadRoutes {
			name := r.ConsumerName
			if name == "" {
				name = r.ConsumerID + " (deleted)"
			}
			rows = append(rows, []string{e.ID, timeCell(e.OccurredAt), e.Type, name,
				intake.AttemptOf(r.Attempt, r.MaxAttempts), r.LastError})
		}
		if len(e.DeadRoutes) == 0 {
			rows = append(rows, []string{e.ID, timeCell(e.OccurredAt), e.Type, "-", "-", "-"})
		}
	}
	if err := cl.printTable([]string{"ID", "OCCURRED", "TYPE", "CONSUMER", "ATTEMPT", "LAST ERROR"}, rows); err != nil {
		return err
	}
	if list.NextCursor != "" {
		_, err = fmt.Fprintf(cl.stdout(), "more: --cursor %s\n", list.NextCursor)
	}
	return err
}

// EventsShowCmd shows one event.
type EventsShowCmd struct {
	outputFlags
	ID string `arg:"" help:"Event id."`
}

// Run shows the event, with its deliveries and each consumer's answer.
func (c *EventsShowCmd) Run(cl *Client) error {
	path := idPath("/api/v1/events", c.ID)
	if c.JSON {
		return cl.show(c.outputFlags, path)
	}
	var d api.EventDetail
	if _, err := cl.get(path, nil, &d); err != nil {
		return err
	}
	return printEventDetail(cl.stdout(), d)
}

// EventsUnclaimedCmd lists no_consumer events of every org.
type EventsUnclaimedCmd struct {
	Limit  int    `name:"limit" help:"Events per page (default 50, at most 500)."`
	Cursor string `name:"cursor" help:"Continue after the page that printed this cursor."`
	listFlags
}

// Run lists the unclaimed events.
func (c *EventsUnclaimedCmd) Run(cl *Client) error {
	q := url.Values{}
	if c.Limit != 0 {
		q.Set("limit", strconv.Itoa(c.Limit))
	}
	setParam(q, "cursor", c.Cursor)
	return printList(cl, c.listFlags, "/api/v1/unclaimed", q,
		[]string{"ID", "ORG", "OCCURRED", "TYPE", "KIND", "CONNECTION"},
		func(e api.Event) []string {
			return []string{e.ID, e.OrgID, timeCell(e.OccurredAt), e.Type, e.Kind, e.ConnectionID}
		})
}

func setParam(q url.Values, key, value string) {
	if value != "" {
		q.Set(key, value)
	}
}
