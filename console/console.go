// Package console serves the web console at /console: server-rendered pages
// over the same operator actions and reads as the admin API, for operators
// who would rather look than read JSON. A session is signed in with the
// staff token, an org's API key, or by a person at an OpenID provider
// (oidc.go), and every read goes through the session's scope, so another
// org's rows do not exist for it.
package console

import (
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

//go:embed templates static
var assets embed.FS

// Config is what the console needs. Store is required, and Control or
// Sealer; the rest have working zero values.
type Config struct {
	// Control performs every operator action and read, sessions' sign-in
	// and sign-out included; required.
	Control   *control.Plane
	PublicURL string // where providers reach ingress; endpoint URLs are shown under it
	Clock     intake.Clock
	// SessionTTL is how long a sign-in lasts (default 12h).
	SessionTTL time.Duration
	// SingleSignOn, once its Issuer is set, lets people sign in at their
	// identity provider; token sign-in stays.
	SingleSignOn SingleSignOn
	Logger       *slog.Logger
}

// Console is the web console.
type Console struct {
	ctl       *control.Plane
	publicURL string
	httpsURL  bool
	clock     intake.Clock
	log       *slog.Logger
	sessions  *sessions
	sso       *sso // nil: no single sign-on
	pages     map[string]*template.Template
	mux       *http.ServeMux
	overviews overviewCache
	// openIssues keeps the nav's count of open issues.
	openIssues openIssueCounts
}

// New returns the console for cfg.
func New(cfg Config) *Console {
	c := &Console{
		ctl:       cfg.Control,
		publicURL: strings.TrimRight(cfg.PublicURL, "/"),
		httpsURL:  strings.HasPrefix(cfg.PublicURL, "https://"),
		clock:     cfg.Clock,
		log:       cfg.Logger,
		mux:       http.NewServeMux(),
	}
	if c.ctl == nil {
		panic("console: Config.Control is required")
	}
	if c.clock == nil {
		c.clock = intake.SystemClock{}
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	ttl := cfg.SessionTTL
	if ttl <= 0 {
		ttl = 12 * time.Hour
	}
	c.sessions = &sessions{ttl: ttl, ctl: c.ctl}
	if cfg.SingleSignOn.Issuer != "" {
		c.sso = newSSO(cfg.SingleSignOn)
	}
	c.pages = parsePages()
	c.routes()
	return c
}

// Handler serves /console/….
func (c *Console) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// Pages show request data anyone could have posted to an endpoint:
		// nothing but the console's own script and styles may run.
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		c.mux.ServeHTTP(w, r)
	})
}

func (c *Console) routes() {
	static, err := fs.Sub(assets, "static")
	if err != nil {
		panic(err) // the embedded tree always has static/
	}
	files := http.StripPrefix("/console/static/", http.FileServerFS(static))
	c.mux.HandleFunc("GET /console/static/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
	c.mux.HandleFunc("GET /console/login", c.loginPage)
	c.mux.HandleFunc("POST /console/login", c.login)
	if c.sso != nil {
		c.mux.HandleFunc("GET "+ssoStartPath, c.startSSO)
		c.mux.HandleFunc("GET "+ssoCallbackPath, c.finishSSO)
	}
	c.action("POST /console/logout", c.logout)

	c.page("GET /console/{$}", c.overview)
	c.page("GET /console/issues", c.issues)
	c.page("GET /console/issues/{id}", c.issue)
	c.action("POST /console/issues/{id}/status", c.setIssueStatus)
	c.action("POST /console/issues/{id}/retry", c.retryIssue)
	c.page("GET /console/messages", c.messages)
	c.page("GET /console/messages/{id}", c.message)
	c.page("GET /console/messages/{id}/body", c.messageBody)
	c.action("POST /console/messages/{id}/replay", c.replayMessage)
	c.action("POST /console/messages/replay", c.replayMessages)
	c.page("GET /console/jobs/{id}", c.job)
	c.action("POST /console/messages/{id}/adopt-secret", c.adoptSecret)
	c.page("GET /console/events", c.events)
	c.page("GET /console/events/{id}", c.event)
	c.action("POST /console/events/{id}/reroute", c.rerouteEvent)
	c.action("POST /console/events/{id}/retry", c.retryEvent)
	c.page("GET /console/event-types", c.eventTypes)
	c.page("GET /console/event-types/{connection}/{type...}", c.eventType)
	c.action("POST /console/events/reroute", c.rerouteEvents)
	c.page("GET /console/unclaimed", c.unclaimed)
	c.page("GET /console/dead", c.dead)
	c.action("POST /console/dead/replay", c.replayDead)
	c.action("POST /console/dead/reroute", c.rerouteDead)
	c.page("GET /console/endpoints", c.endpoints)
	c.action("POST /console/endpoints", c.createEndpoint)
	c.action("POST /console/endpoints/{id}/enabled", c.setEndpointEnabled)
	c.action("POST /console/endpoints/{id}/rotate", c.rotateEndpoint)
	c.page("GET /console/connections", c.connections)
	c.action("POST /console/connections", c.createConnection)
	c.action("POST /console/connections/{id}/disable", c.disableConnection)
	c.page("GET /console/connections/{id}", c.connection)
	c.action("POST /console/connections/{id}/test", c.testConnectionRules)
	c.action("POST /console/connections/{id}/rules", c.saveConnectionRules)
	c.page("GET /console/notifications", c.notifications)
	c.action("POST /console/notifications", c.saveNotifications)
	c.page("GET /console/consumers", c.consumers)
	c.action("POST /console/consumers", c.createConsumer)
	c.action("POST /console/consumers/{id}/enabled", c.setConsumerEnabled)
	c.page("GET /console/consumers/{id}", c.consumer)
	c.action("POST /console/consumers/{id}/test", c.testConsumerRules)
	c.action("POST /console/consumers/{id}/rules", c.saveConsumerRules)
	c.action("POST /console/consumers/{id}/pause", c.pauseConsumer)
	c.action("POST /console/consumers/{id}/retry", c.retryConsumer)
	c.action("POST /console/consumers/{id}/rotate-secret", c.rotateConsumerSecret)
	c.action("POST /console/consumers/{id}/send-test", c.testConsumer)
	c.action("POST /console/consumers/{id}/controls", c.saveConsumerControls)
	c.action("POST /console/consumers/{id}/settings", c.saveConsumerSettings)
	c.page("/console/", func(w http.ResponseWriter, r *http.Request, s *session) error {
		return intake.Errorf(intake.ENOTFOUND, "no such page")
	})
}

// handlerFunc serves a signed-in request; its error is rendered as a page.
type handlerFunc func(w http.ResponseWriter, r *http.Request, s *session) error

// page serves a page to a signed-in session, and sends anyone else to the
// sign-in page, to come back after.
func (c *Console) page(pattern string, h handlerFunc) {
	c.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		s, err := c.session(r)
		if err != nil {
			if intake.ErrorCode(err) != intake.EUNAUTHORIZED {
				c.fail(w, r, nil, err)
				return
			}
			http.Redirect(w, r, "/console/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		if err := h(w, r, s); err != nil {
			c.fail(w, r, s, err)
		}
	})
}

// action serves a state-changing form: it needs a session, a request from
// the console's own pages (Origin) and the session's CSRF token.
func (c *Console) action(pattern string, h handlerFunc) {
	c.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		s, err := c.session(r)
		switch {
		case err != nil:
		case !c.sameOrigin(r):
			err = intake.Errorf(intake.EFORBIDDEN, "this form did not come from the console")
		case !c.sessions.checkCSRF(s, r.PostFormValue("csrf")):
			err = intake.Errorf(intake.EFORBIDDEN, "this form has expired; reload the page and try again")
		default:
			err = h(w, r, s)
		}
		if err != nil {
			c.fail(w, r, s, err)
		}
	})
}

// session returns the request's session, or EUNAUTHORIZED.
func (c *Console) session(r *http.Request) (*session, error) {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return nil, intake.Errorf(intake.EUNAUTHORIZED, "sign in")
	}
	return c.sessions.open(r.Context(), control.Client(r), ck.Value, c.clock.Now())
}

// sameOrigin reports whether a POST came from a page of this host: the
// browser's Origin (or, failing that, Referer) names it.
func (c *Console) sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		origin = r.Header.Get("Referer")
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if u.Host == r.Host {
		return true
	}
	pub, err := url.Parse(c.publicURL)
	return err == nil && pub.Host != "" && u.Host == pub.Host
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if s, err := c.session(r); err == nil && s != nil {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	c.render(w, r, nil, http.StatusOK, "login", "Sign in", c.loginView(safeNext(r.URL.Query().Get("next")), ""))
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	next := safeNext(r.PostFormValue("next"))
	if !c.sameOrigin(r) {
		c.render(w, r, nil, http.StatusForbidden, "login", "Sign in", c.loginView(next, "This form did not come from the console."))
		return
	}
	now := c.clock.Now()
	if !c.sessions.limits.allow(r, now) {
		w.Header().Set("Retry-After", "60")
		c.render(w, r, nil, http.StatusTooManyRequests, "login", "Sign in", c.loginView(next, "Too many sign-in attempts; wait a minute and try again."))
		return
	}
	value, err := c.sessions.login(r.Context(), control.Client(r), r.PostFormValue("token"), now)
	if err != nil {
		status, msg := control.HTTPStatus(err), intake.ErrorMessage(err)
		switch status {
		case http.StatusUnauthorized:
		case http.StatusServiceUnavailable:
			c.log.Warn("console sign-in: storage unavailable", "err", err)
			w.Header().Set("Retry-After", control.RetryAfterSeconds)
			msg = "The console cannot check tokens right now; try again shortly."
		default:
			c.log.Error("console sign-in", "err", err)
			status, msg = http.StatusInternalServerError, "The console cannot check tokens right now."
		}
		c.render(w, r, nil, status, "login", "Sign in", c.loginView(next, msg))
		return
	}
	c.setCookie(w, r, value, int(c.sessions.ttl.Seconds()))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := c.sessions.revoke(r.Context(), s, c.clock.Now()); err != nil {
		return err
	}
	c.setCookie(w, r, "", -1)
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
	return nil
}

// safeNext keeps a post-sign-in destination inside the console.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/console/") || strings.HasPrefix(next, "/console/login") || strings.ContainsAny(next, "\\\r\n") {
		return "/console/"
	}
	return next
}

// fail renders an error as a page: not found for anything the session
// cannot see (existence never leaks), the message for what the operator
// can fix, and nothing of an internal error.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		err = intake.Errorf(intake.ETOOLARGE, "the form is too large")
	}
	status := control.HTTPStatus(err)
	title, msg := "That did not work", intake.ErrorMessage(err)
	switch status {
	case http.StatusNotFound:
		title, msg = "Not found", "There is nothing here, or it belongs to another org."
	case http.StatusRequestEntityTooLarge:
		status = http.StatusBadRequest
	case http.StatusForbidden:
		title = "Not allowed"
	case http.StatusUnauthorized:
		c.setCookie(w, r, "", -1)
		http.Redirect(w, r, "/console/login", http.StatusSeeOther)
		return
	case http.StatusServiceUnavailable:
		c.log.Warn("console: storage unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", control.RetryAfter(err))
		title = "Unavailable"
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", control.RetryAfter(err))
		title = "Busy"
	case http.StatusInternalServerError:
		c.log.Error("console", "method", r.Method, "path", r.URL.Path, "err", err)
		title, msg = "Something went wrong", "The console could not do that. The server log has the details."
	}
	c.render(w, r, s, status, "error", title, errorView{Message: msg, Back: backLink(r)})
}

// backLink is where an error page's back link goes: the page the form was
// on, when it was the console's.
func backLink(r *http.Request) string {
	if ref, err := url.Parse(r.Header.Get("Referer")); err == nil && ref.Host == r.Host && strings.HasPrefix(ref.Path, "/console/") {
		return ref.RequestURI()
	}
	return "/console/"
}

// pathID returns the {id} path value; a malformed one is not found, like
// any id the session cannot see.
func pathID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !intake.ValidID(id) {
		return "", intake.Errorf(intake.ENOTFOUND, "no such id")
	}
	return id, nil
}

// redirect answers a form with the page to show next (post/redirect/get).
func redirect(w http.ResponseWriter, r *http.Request, to string) error {
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}
