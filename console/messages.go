package console

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/rawbody"
)

// pageSize is how many rows a list shows; lists page by keyset, so a page
// costs the same on the first page as on the thousandth.
const pageSize = 50

// messagesView is the messages page: a filtered page of messages, or a
// search's.
type messagesView struct {
	Items     []messageRow
	Endpoints []option
	States    []string
	Filter    messageFilter
	Next      string // the query of the next page; "" on the last
	Paged     bool   // this is not the first page
	// Error says why the search could not run; the form keeps what was
	// written.
	Error string
	// Replayable counts the original messages the search selects, which
	// the page offers to replay (0: none, or no search).
	Replayable int
	// OverBulk: Replayable is past the bulk maximum, so the replay runs
	// as a job, confirmed by the click.
	OverBulk bool
}

// messageFilter is the messages page's form, as written.
type messageFilter struct {
	Endpoint, State, Since, Until, ProviderEventID, Type, Match, Q string
}

// Searching reports whether the form searches bodies or events.
func (mf messageFilter) Searching() bool { return mf.Match != "" || mf.Q != "" }

// Filtered reports whether the form selects anything in particular.
func (mf messageFilter) Filtered() bool { return mf != messageFilter{} }

func messageForm(v url.Values) messageFilter {
	return messageFilter{Endpoint: v.Get("endpoint"), State: v.Get("state"), Since: v.Get("since"), Until: v.Get("until"),
		ProviderEventID: v.Get("provider_event_id"), Type: v.Get("type"), Match: v.Get("match"), Q: v.Get("q")}
}

// query is the form as a URL's query, with kv after it.
func (mf messageFilter) query(kv ...string) string {
	return queryString(append([]string{"endpoint", mf.Endpoint, "state", mf.State, "since", mf.Since, "until", mf.Until,
		"provider_event_id", mf.ProviderEventID, "type", mf.Type, "match", mf.Match, "q", mf.Q}, kv...)...)
}

// messageRow is a message with a readable name for its endpoint.
type messageRow struct {
	intake.Message
	Endpoint string
}

// option is a choice of a form's select.
type option struct {
	Value, Label string
}

func (c *Console) messages(w http.ResponseWriter, r *http.Request, s *session) error {
	q := r.URL.Query()
	mf := messageForm(q)
	names, endpoints, err := c.endpointNames(r.Context(), s)
	if err != nil {
		return err
	}
	v := messagesView{Endpoints: endpoints, States: messageStates(), Filter: mf, Paged: q.Get("cursor") != ""}
	f, err := mf.parse()
	var page intake.Page[intake.Message]
	if err == nil {
		f.Limit, f.Cursor = pageSize, q.Get("cursor")
		page, err = c.ctl.Messages(r.Context(), s.caller(), f)
	}
	if err == nil && mf.Searching() && len(page.Items) > 0 {
		originals := f
		originals.Originals, originals.Cursor = true, ""
		v.Replayable, err = c.ctl.CountMessages(r.Context(), s.caller(), originals)
		v.OverBulk = v.Replayable > c.ctl.BulkMax()
	}
	status := http.StatusOK
	if intake.ErrorCode(err) == intake.EINVALID {
		// The page again, with the form as written and why it failed.
		status, v.Error = http.StatusBadRequest, intake.ErrorMessage(err)
	} else if err != nil {
		return err
	}
	for _, m := range page.Items {
		v.Items = append(v.Items, messageRow{Message: m, Endpoint: names[m.EndpointID]})
	}
	if page.NextCursor != "" {
		v.Next = mf.query("cursor", page.NextCursor)
	}
	c.render(w, r, s, status, "messages", "Messages", v)
	return nil
}

// replayMessages replays every original message the page's search selects
// (past the bulk maximum, when confirmed, as a job), through the admin
// API's bulk replay, each audited with the search.
func (c *Console) replayMessages(w http.ResponseWriter, r *http.Request, s *session) error {
	mf := messageForm(r.PostForm)
	f, err := mf.parse()
	if err != nil {
		return err
	}
	res, err := c.ctl.ReplayWhere(r.Context(), s.caller(), f, confirmed(r))
	if err != nil || res.Job != nil {
		return jobOr(w, r, res, err)
	}
	return redirect(w, r, "/console/messages"+mf.query("flash", "replayed-search", "n", strconv.Itoa(res.Count)))
}

// parse turns the form's filter into the store's, reading its times and
// its search by the control plane's rules; the control plane checks the
// rest.
func (mf messageFilter) parse() (intake.MessageFilter, error) {
	f := intake.MessageFilter{EndpointID: mf.Endpoint, State: intake.MessageState(mf.State), ProviderEventID: mf.ProviderEventID, Type: mf.Type}
	var err error
	if f.Search, err = control.ParseSearch(mf.Match, mf.Q); err != nil {
		return f, err
	}
	if f.Since, err = formTime("since", mf.Since); err != nil {
		return f, err
	}
	if f.Until, err = formTime("until", mf.Until); err != nil {
		return f, err
	}
	return f, nil
}

// formTime reads a time field: a browser's datetime-local (taken as UTC,
// which is how the console shows times) or RFC 3339.
func formTime(field, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, intake.Errorf(intake.EINVALID, "%s must be a time like 2025-03-14T09:30 (UTC)", field)
}

// endpointNames names each endpoint of the session's scope by its
// connection ("stripe · live", after the org's name for staff), and lists
// them for filters.
func (c *Console) endpointNames(ctx context.Context, s *session) (map[string]string, []option, error) {
	conns, err := c.ctl.Connections(ctx, s.caller())
	if err != nil {
		return nil, nil, err
	}
	orgName := map[string]string{}
	if s.staff {
		orgs, err := c.ctl.Orgs(ctx, s.caller())
		if err != nil {
			return nil, nil, err
		}
		for _, o := range orgs {
			orgName[o.ID] = o.Name + " · "
		}
	}
	connName := map[string]string{}
	for _, cn := range conns {
		connName[cn.ID] = orgName[cn.OrgID] + cn.Provider + " · " + cn.Name
	}
	eps, err := c.ctl.Endpoints(ctx, s.caller())
	if err != nil {
		return nil, nil, err
	}
	names := map[string]string{}
	opts := make([]option, 0, len(eps))
	for _, e := range eps {
		label := connName[e.ConnectionID] + " · …" + e.ID[len(e.ID)-6:]
		names[e.ID] = label
		opts = append(opts, option{Value: e.ID, Label: label})
	}
	slices.SortFunc(opts, func(a, b option) int { return strings.Compare(a.Label, b.Label) })
	return names, opts, nil
}

// messageView is a message's detail page.
type messageView struct {
	M           intake.Message
	Endpoint    string
	Headers     []header
	Hidden      int
	Query       string
	Body        shownBody
	BodyExpired bool
	Events      []intake.Event
	Attempts    []intake.Attempt
	// HandshakeSecret: the message is a handshake whose provider hands its
	// signing secret over in it (Asana), so the connection can adopt it.
	HandshakeSecret bool
}

type header struct {
	Name  string
	Value string
}

func (c *Console) message(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	m, err := c.ctl.Message(r.Context(), s.caller(), id)
	if err != nil {
		return err
	}
	v := messageView{M: m.Message, Query: m.Query, BodyExpired: m.BodyExpired, Hidden: m.HiddenHeaders, HandshakeSecret: m.HandshakeSecret}
	if names, _, err := c.endpointNames(r.Context(), s); err == nil {
		v.Endpoint = names[m.EndpointID]
	} else {
		return err
	}
	for name, values := range m.Header {
		v.Headers = append(v.Headers, header{Name: http.CanonicalHeaderKey(name), Value: strings.Join(values, ", ")})
	}
	slices.SortFunc(v.Headers, func(a, b header) int { return strings.Compare(a.Name, b.Name) })
	if !m.BodyExpired {
		body, size, _, err := c.ctl.OpenMessageBody(r.Context(), s.caller(), id)
		switch {
		case intake.ErrorCode(err) == intake.ENOTFOUND:
			v.BodyExpired = true
		case err != nil:
			return err
		default:
			v.Body, err = showStored(body, size)
			body.Close()
			if err != nil {
				return err
			}
		}
	}
	attempts, err := c.ctl.MessageAttempts(r.Context(), s.caller(), id)
	if err != nil {
		return err
	}
	v.Attempts = attempts
	for _, eid := range m.EventIDs {
		e, err := c.ctl.Event(r.Context(), s.caller(), eid)
		if intake.ErrorCode(err) == intake.ENOTFOUND {
			continue // deleted by retention
		}
		if err != nil {
			return err
		}
		v.Events = append(v.Events, e)
	}
	c.render(w, r, s, http.StatusOK, "message", "Message "+short(id), v)
	return nil
}

// messageBody downloads the raw body exactly as received.
func (c *Console) messageBody(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	body, size, header, err := c.ctl.OpenMessageBody(r.Context(), s.caller(), id)
	if err != nil {
		return err
	}
	defer body.Close()
	rawbody.Stream(w, body, size, header, "message-"+id+".body")
	return nil
}

func (c *Console) replayMessage(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	m, err := c.ctl.ReplayMessage(r.Context(), s.caller(), id)
	if err != nil {
		return err
	}
	return redirect(w, r, "/console/messages/"+m.ID+"?flash=replayed")
}

// adoptSecret adds the signing secret a handshake carried to the
// message's connection.
func (c *Console) adoptSecret(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	m, err := c.ctl.Message(r.Context(), s.caller(), id)
	if err != nil {
		return err
	}
	_, added, err := c.ctl.AdoptHandshakeSecret(r.Context(), s.caller(), m.ConnectionID, m.ID)
	if err != nil {
		return err
	}
	if !added {
		return redirect(w, r, "/console/messages/"+m.ID+"?flash=secret-known")
	}
	return redirect(w, r, "/console/messages/"+m.ID+"?flash=secret-adopted")
}

func short(id string) string {
	if len(id) > 12 {
		return "…" + id[len(id)-12:]
	}
	return id
}
