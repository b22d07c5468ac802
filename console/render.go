package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

// pageNames are the templates under templates/, each rendered inside
// layout.html.
var pageNames = []string{"login", "signed-in", "error", "overview", "messages", "message", "events", "event", "unclaimed",
	"dead", "endpoints", "connections", "consumers", "consumer", "connection", "notifications", "event-types", "event-type",
	"issues", "issue", "job"}

func parsePages() map[string]*template.Template {
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		pages[name] = template.Must(template.New("layout.html").Funcs(funcs).
			ParseFS(assets, "templates/layout.html", "templates/partials.html", "templates/"+name+".html"))
	}
	return pages
}

// view is what every page template gets: the page's own data in Data.
type view struct {
	Title   string
	Nav     string
	Signed  bool
	Staff   bool
	OrgName string
	Role    intake.Role // an org's session's role; staff has none
	Actor   string
	CSRF    string
	Flash   string
	Data    any
	// OpenIssues is the count of open issues the nav shows (-1: none
	// could be read).
	OpenIssues int
	who        control.Caller
}

// Can reports whether the session may do what needs at least role
// ("viewer", "operator" or "admin"): a page shows only the forms the
// control plane would let through, and the control plane still refuses
// the rest.
func (v view) Can(role string) bool { return v.Signed && v.who.Can(intake.Role(role)) }

// render writes a page. A template that fails to execute is a bug: the
// error is logged and a plain 500 answered.
func (c *Console) render(w http.ResponseWriter, r *http.Request, s *session, status int, name, title string, data any) {
	v := view{Title: title, Nav: strings.TrimSuffix(name, "s") + "s", Data: data, Flash: flash(r)}
	if name == "overview" || name == "dead" || name == "unclaimed" {
		v.Nav = name
	}
	if name == "issue" {
		v.Nav = "issues"
	}
	if name == "job" {
		v.Nav = "messages"
	}
	if s != nil {
		v.Signed, v.Staff, v.OrgName, v.Role, v.Actor, v.CSRF = true, s.staff, s.orgName, s.Role, s.Actor, c.sessions.csrf(s)
		v.who = s.caller()
		v.OpenIssues = c.openIssues.get(r.Context(), s.scope(), c.clock.Now(), func(ctx context.Context) (int, error) {
			return c.ctl.CountOpenIssues(ctx, s.caller())
		})
	}
	var buf bytes.Buffer
	if err := c.pages[name].Execute(&buf, v); err != nil {
		c.log.Error("console template", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w) // the browser went away; nothing left to tell it
}

// flashes are the notices a redirect may ask for by name, so a URL can
// never put words of its own on a console page.
var flashes = map[string]string{
	"replayed":            "Replayed: this is the new message.",
	"rerouted":            "Re-routed: the event is pending again.",
	"retried":             "Retry now: %s events made due; they go as their consumers' controls allow (a tripped consumer gets one probe).",
	"retried-one":         "Retry now: 1 event made due; it goes as its consumers' controls allow (a tripped consumer gets one probe).",
	"replayed-dead":       "Replayed %s dead messages.",
	"rerouted-dead":       "Re-routed %s dead events.",
	"replayed-search":     "Replayed %s messages this search selects: each is a new message, below the ones it replays.",
	"rerouted-search":     "Re-routed %s events this search selects: they are pending again.",
	"endpoint-enabled":    "The endpoint accepts webhooks again.",
	"endpoint-disabled":   "The endpoint now refuses webhooks (404, nothing recorded).",
	"connection-disabled": "Every endpoint of the connection now refuses webhooks.",
	"consumer-enabled":    "The consumer receives events again.",
	"consumer-disabled":   "The consumer no longer receives events.",
	"rules-saved":         "Rules saved: the next events are routed with them.",
	"consumer-paused":     "Paused: deliveries to this consumer are held; they spend no attempt.",
	"consumer-resumed":    "Resumed: held deliveries go at the consumer's rate.",
	"notifications-saved": "Notifications saved.",
	"consumer-saved":      "Consumer saved: the next deliveries go to its URL, for its event types.",
	"controls-saved":      "Delivery controls saved: they apply to the next calls, on every process.",
	"secret-adopted":      "The connection now verifies with this handshake's secret.",
	"secret-known":        "The connection already had this handshake's secret.",
	"issue-acknowledged":  "Acknowledged: the issue keeps counting, sends no notice but its resolution, and leaves the open list.",
	"issue-open":          "Reopened: the issue is open again.",
	"issue-dismissed":     "Dismissed: the issue reopens if its cause returns.",
}

func flash(r *http.Request) string {
	q := r.URL.Query()
	f, ok := flashes[q.Get("flash")]
	if !ok {
		return ""
	}
	if strings.Contains(f, "%s") {
		n, err := strconv.Atoi(q.Get("n"))
		if err != nil || n < 0 {
			return ""
		}
		return fmt.Sprintf(f, strconv.Itoa(n))
	}
	return f
}

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	},
	"ago":        ago,
	"issueTitle": issueTitle,
	"stateClass": func(state any) string { return "state state-" + fmt.Sprint(state) },
	"dash": func(s string) string {
		if s == "" {
			return "—"
		}
		return s
	},
	"bytes":    humanBytes,
	"join":     strings.Join,
	"duration": func(d time.Duration) string { return d.Round(100 * time.Millisecond).String() },
	"ms": func(d time.Duration) string {
		return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) + " ms"
	},
	"qs": func(kv ...string) template.URL { return template.URL(queryString(kv...)) },
	"percent": func(part, whole int) string {
		if whole == 0 {
			return "—"
		}
		return strconv.FormatFloat(100*float64(part)/float64(whole), 'f', 1, 64) + " %"
	},
	"add":       func(a, b int) int { return a + b },
	"attemptOf": intake.AttemptOf,
}

// configFact is one setting of a connection's config as a person reads it.
type configFact struct {
	Key, Value string
	Code       bool // a script: shown as a block of code
	Hidden     bool // a credential (Meta's verify token): shown only as set
}

// configFacts shows a connection's settings as control gives them: a
// string as written, a nested value as compact JSON, and a setting control
// marks a credential only as set.
func configFacts(settings []control.Setting) []configFact {
	facts := make([]configFact, 0, len(settings))
	for _, s := range settings {
		f := configFact{Key: s.Key}
		var str string
		switch {
		case s.Credential:
			f.Hidden = true
		case json.Unmarshal(s.Value, &str) == nil:
			f.Value, f.Code = str, s.Key == "script"
		default:
			var buf bytes.Buffer
			json.Compact(&buf, s.Value)
			f.Value = buf.String()
		}
		facts = append(facts, f)
	}
	return facts
}

// ago says how long ago t was, roughly.
func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := time.Since(t)
	switch {
	case d < 0:
		return "in " + roughly(-d)
	case d < 5*time.Second:
		return "just now"
	}
	return roughly(d) + " ago"
}

func roughly(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h"
	}
	return strconv.Itoa(int(d.Hours()/24)) + "d"
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " B"
}

// queryString builds "?k=v&…" from pairs, leaving out empty values.
func queryString(kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		if b.Len() == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(kv[i]) + "=" + url.QueryEscape(kv[i+1]))
	}
	return b.String()
}

// maxShownBody is the most of a body or of event data a page shows; the
// raw body can be downloaded whole.
const maxShownBody = 64 << 10

// shownBody is a body or JSON document prepared for a page.
type shownBody struct {
	Text      string
	JSON      bool
	Binary    bool
	Truncated int // bytes left out
	Size      int64
}

// showBody pretty-prints JSON, and caps what is shown at maxShownBody.
func showBody(b []byte) shownBody {
	out := shownBody{Size: int64(len(b))}
	var pretty bytes.Buffer
	if len(b) <= 4*maxShownBody && json.Valid(b) && json.Indent(&pretty, b, "", "  ") == nil {
		b, out.JSON = pretty.Bytes(), true
	}
	if !utf8.Valid(b) {
		out.Binary = true
		b = []byte(strings.ToValidUTF8(string(b), "\uFFFD"))
	}
	if len(b) > maxShownBody {
		cut := maxShownBody
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		out.Truncated = len(b) - cut
		b = b[:cut]
	}
	out.Text = string(b)
	return out
}

// showStored shows a stored body of size bytes, reading no more of it
// than the page can show: a body in object storage may be 100 MiB.
func showStored(r io.Reader, size int64) (shownBody, error) {
	prefix, err := io.ReadAll(io.LimitReader(r, 4*maxShownBody+1))
	if err != nil {
		return shownBody{}, err
	}
	if int64(len(prefix)) >= size {
		return showBody(prefix), nil
	}
	// A prefix may end inside a character: drop its start.
	for i := len(prefix) - 1; i >= 0 && i >= len(prefix)-utf8.UTFMax; i-- {
		if utf8.RuneStart(prefix[i]) {
			if !utf8.FullRune(prefix[i:]) {
				prefix = prefix[:i]
			}
			break
		}
	}
	out := showBody(prefix)
	out.Size, out.Truncated = size, out.Truncated+int(size-int64(len(prefix)))
	return out, nil
}

// stateCount pairs a state with a count, for summaries.
type stateCount struct {
	State string
	Count int
}

// errorView is the error page's data.
type errorView struct {
	Message string
	Back    string
}

// loginView is the sign-in page's data.
type loginView struct {
	Next  string
	Error string
	// SingleSignOn shows the single sign-on button, which goes to SSOHref.
	SingleSignOn bool
	SSOHref      string
}

// messageStates and eventStates are the filters' choices.
func messageStates() []string { return states(intake.MessageStates) }
func eventStates() []string   { return states(intake.EventStates) }

func states[S ~string](in []S) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = string(s)
	}
	return out
}
