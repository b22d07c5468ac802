package metrics

import (
	"crypto/sha256"
	"crypto/subtle"
	"log"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/intakehq/intake"
)

// RenderEvery is how long one collection of the registry serves every
// scrape: the store's gauges query large tables, so any number of
// scrapers cost one collection a second.
const RenderEvery = time.Second

// HandlerOptions say who may scrape and whose clock ages the cached render.
type HandlerOptions struct {
	// Clock times the cached render; nil: the system's.
	Clock intake.Clock
	// Token, when set, is the bearer a scrape must present (401 without it).
	Token string
	// ErrorLog receives what went wrong collecting or encoding; nil: none.
	ErrorLog *log.Logger
}

// Handler serves /metrics in the format the scraper negotiates (the
// Prometheus text format unless it asks for another; compressed if it
// accepts it), from a render at most RenderEvery old.
func (m *Metrics) Handler(o HandlerOptions) http.Handler {
	if o.Clock == nil {
		o.Clock = intake.SystemClock{}
	}
	h := promhttp.HandlerFor(&cached{g: m.Registry, clock: o.Clock, every: RenderEvery},
		promhttp.HandlerOpts{ErrorLog: o.ErrorLog})
	if o.Token == "" {
		return h
	}
	want := sha256.Sum256([]byte(o.Token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		// Compared as digests, so neither the token nor its length leaks
		// through the time a refusal takes.
		got := sha256.Sum256([]byte(token))
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			http.Error(w, "metrics need a bearer token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// cached gathers from g at most once every while: scrapers that come
// during a collection wait for it and share it, and those within every of
// its end are served it again.
type cached struct {
	g     prometheus.Gatherer
	clock intake.Clock
	every time.Duration

	mu       sync.Mutex // held through a collection
	rendered bool
	at       time.Time // when the last collection ended
	families []*dto.MetricFamily
	err      error
}

// Gather returns the last collection while it is fresh. Its families are
// shared between scrapes: promhttp only reads them.
func (c *cached) Gather() ([]*dto.MetricFamily, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.clock.Now(); c.rendered && now.Sub(c.at) < c.every && !now.Before(c.at) {
		return c.families, c.err
	}
	c.families, c.err = c.g.Gather()
	// Aged from its end, so a collection slower than every is still
	// shared by the scrapers that waited for it.
	c.rendered, c.at = true, c.clock.Now()
	return c.families, c.err
}
