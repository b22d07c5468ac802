// Package ingress receives webhooks at /webhooks/{token}: it finds the
// endpoint, enforces its limits, commits the request durably through the
// store, and only then answers.
package ingress

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/cache"
	"github.com/intakehq/intake/internal/handoff"
	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/pressure"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/internal/token"
	"github.com/intakehq/intake/provider"
)

// Config wires a Handler.
type Config struct {
	Store     intake.Ingester
	Sealer    *seal.Sealer // opens connection secrets for handshakes that depend on them
	PublicURL string       // the base URL providers were given, for URL-signing schemes
	Clock     intake.Clock
	Permits   Permits
	Metrics   *metrics.Metrics
	Logger    *slog.Logger
	// Quota, when set, refuses webhooks while the store is over its limit.
	Quota *Quota
	// EndpointTTL is how long an endpoint looked up by its token is reused
	// (default 1s) unless the store's change counter moves first.
	EndpointTTL time.Duration
	// Handoff, when set, is the local worker's: while it has room, a
	// message commits under its first lease and goes straight to the
	// worker, with the body it arrived with.
	Handoff *handoff.Messages
	// Pressure, when set, counts the requests waiting for their commit,
	// for processing to yield to them under a burst.
	Pressure *pressure.Gauge
}

// Handler serves /webhooks/{token} for any method.
type Handler struct {
	cfg      Config
	draining atomic.Bool
	quotaMu  sync.Mutex
	quotaAt  map[string]time.Time // per org: when its last storage.quota notice was written
	eps      cache.TTL[string, intake.Endpoint]
	conns    cache.TTL[string, connSecrets]
}

// New returns an ingress handler.
func New(cfg Config) *Handler {
	if cfg.Clock == nil {
		cfg.Clock = intake.SystemClock{}
	}
	if cfg.Permits == nil {
		cfg.Permits = &LocalPermits{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	if cfg.EndpointTTL == 0 {
		cfg.EndpointTTL = time.Second
	}
	h := &Handler{cfg: cfg}
	h.eps.TTL, h.conns.TTL = cfg.EndpointTTL, connTTL
	h.eps.Changes, h.conns.Changes = cfg.Store.Changes(), cfg.Store.Changes()
	return h
}

// Drain makes every new request answer 503, so a provider retries against
// another process while this one finishes its commits.
func (h *Handler) Drain() { h.draining.Store(true) }

// hopByHop headers describe one connection, not the request; they are not
// kept.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Te", "Trailer",
	"Transfer-Encoding", "Upgrade"}

// Answers carry no errors, secrets or paths, and no id but the receipt's:
// the stored message's own id, by which its sender (intake send, say) can
// follow the verification that happens after the answer.
var (
	bodyNotFound    = []byte(`{"error":"not found"}` + "\n")
	bodyTooLarge    = []byte(`{"error":"payload too large"}` + "\n")
	bodyRateLimited = []byte(`{"error":"rate limited"}` + "\n")
	bodyUnavailable = []byte(`{"error":"temporarily unavailable"}` + "\n")
)

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w, r, span := startReceive(w, r)
	result := h.serve(w, r)
	endReceive(w, span, result)
	h.cfg.Metrics.IngressRequests.WithLabelValues(result).Inc()
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) string {
	if h.draining.Load() {
		w.Header().Set("Retry-After", "1")
		answer(w, http.StatusServiceUnavailable, bodyUnavailable)
		return "draining"
	}
	ep, err := h.endpoint(r.Context(), token.Hash(r.PathValue("token")), h.cfg.Clock.Now())
	if err != nil && intake.ErrorCode(err) != intake.ENOTFOUND {
		h.cfg.Logger.Error("ingress: endpoint lookup failed", "err", err)
		answer(w, http.StatusServiceUnavailable, bodyUnavailable)
		return "storage"
	}
	if err != nil {
		answer(w, http.StatusNotFound, bodyNotFound)
		return "unknown_endpoint"
	}
	traceEndpoint(r.Context(), ep)
	if !ep.Enabled {
		answer(w, http.StatusNotFound, bodyNotFound)
		return "disabled"
	}
	if h.cfg.Quota.Exceeded() {
		h.cfg.Logger.Warn("ingress: storage quota reached; refusing", "used_bytes", h.cfg.Quota.Used(), "limit_bytes", h.cfg.Quota.Limit)
		h.quotaNotice(r.Context(), ep)
		w.Header().Set("Retry-After", "60")
		answer(w, http.StatusServiceUnavailable, bodyUnavailable)
		return "storage_quota"
	}
	if r.ContentLength > ep.MaxBodyBytes {
		answer(w, http.StatusRequestEntityTooLarge, bodyTooLarge)
		return "too_large"
	}
	now := h.cfg.Clock.Now()
	ok, retryAfter, err := h.cfg.Permits.Allow(ep, now)
	if err != nil {
		h.cfg.Logger.Warn("ingress: rate permit failed; admitting", "endpoint_id", ep.ID, "err", err)
		ok = true
	}
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(max(retryAfter, time.Second).Seconds()))))
		answer(w, http.StatusTooManyRequests, bodyRateLimited)
		return "rate_limited"
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, ep.MaxBodyBytes+1))
	if err != nil {
		// The client went away or timed out mid-body: nothing to keep.
		answer(w, http.StatusBadRequest, []byte(`{"error":"incomplete body"}`+"\n"))
		return "bad_request"
	}
	if int64(len(body)) > ep.MaxBodyBytes {
		answer(w, http.StatusRequestEntityTooLarge, bodyTooLarge)
		return "too_large"
	}
	m := newMessage(ep, r, body, now)
	traceMessage(r.Context(), m)
	challenge, isChallenge := h.challenge(r.Context(), ep, m, h.publicURL(r), now)
	handed := h.cfg.Handoff.Reserve(m)
	start := time.Now()
	h.cfg.Pressure.Enter()
	err = h.cfg.Store.Ingest(context.WithoutCancel(r.Context()), m)
	h.cfg.Pressure.Leave()
	if err != nil {
		if handed {
			h.cfg.Handoff.Cancel(m.OrgID)
		}
		h.cfg.Logger.Error("ingress: commit failed; not acknowledged", "endpoint_id", ep.ID, "err", err)
		answer(w, http.StatusServiceUnavailable, bodyUnavailable)
		return "storage"
	}
	h.cfg.Metrics.IngestSeconds.Observe(time.Since(start).Seconds())
	if handed {
		h.cfg.Handoff.Give(m)
		h.cfg.Metrics.HandedOver.Inc()
	}
	if isChallenge {
		for k, v := range challenge.Header {
			w.Header()[k] = v
		}
		if challenge.ContentType != "" {
			w.Header().Set("Content-Type", challenge.ContentType)
		}
		w.WriteHeader(challenge.Status)
		w.Write(challenge.Body)
		return "challenge"
	}
	answer(w, http.StatusOK, received(m.ID))
	return "accepted"
}

func newMessage(ep intake.Endpoint, r *http.Request, body []byte, now time.Time) *intake.Message {
	header := r.Header.Clone()
	for _, k := range hopByHop {
		header.Del(k)
	}
	if r.Host != "" {
		header.Set("Host", r.Host)
	}
	sum := sha256.Sum256(body)
	return &intake.Message{
		ID:            intake.NewID(),
		OrgID:         ep.OrgID,
		ConnectionID:  ep.ConnectionID,
		EndpointID:    ep.ID,
		Method:        r.Method,
		Query:         r.URL.RawQuery,
		Header:        header,
		Body:          body,
		Digest:        hex.EncodeToString(sum[:]),
		ReceivedAt:    now,
		State:         intake.MessageQueued,
		MaxAttempts:   intake.DefaultMaxAttempts,
		NextAttemptAt: now,
	}
}

// challenge asks the endpoint's adapter whether the request is a handshake
// to answer inline. Only adapters that answer handshakes cost a connection
// lookup.
func (h *Handler) challenge(ctx context.Context, ep intake.Endpoint, m *intake.Message, publicURL string, now time.Time) (provider.Challenge, bool) {
	a, ok := provider.Lookup(ep.Provider)
	if !ok {
		return provider.Challenge{}, false
	}
	c, ok := a.(provider.Challenger)
	if !ok {
		return provider.Challenge{}, false
	}
	conn, err := h.connection(ctx, ep.ConnectionID, now)
	if err != nil {
		// The request is still stored; the worker verifies it later.
		h.cfg.Logger.Warn("ingress: connection unavailable for a handshake", "connection_id", ep.ConnectionID, "err", err)
	}
	req := provider.Request{Method: m.Method, URL: publicURL, Header: m.Header, Body: bytes.Clone(m.Body), ReceivedAt: m.ReceivedAt}
	req.Query, _ = url.ParseQuery(m.Query)
	return c.Challenge(&req, conn.secrets, conn.cfg)
}

// publicURL is the address the provider was given for this request: the
// configured public base, never the internal address behind a proxy.
func (h *Handler) publicURL(r *http.Request) string {
	u := strings.TrimRight(h.cfg.PublicURL, "/") + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	return u
}

// received is the answer to a stored webhook: {"ok":true,"message_id":ID}.
func received(id string) []byte {
	b := make([]byte, 0, 48+len(id))
	b = append(b, `{"ok":true,"message_id":"`...)
	b = append(b, id...)
	return append(b, "\"}\n"...)
}

func answer(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(body)
}

// quotaNoticeEvery is how often one process tells an org that its webhooks
// are refused for the storage quota; the notifier groups them further.
const quotaNoticeEvery = time.Minute

// quotaNotice records, at most once a minute per org, that the storage
// quota refused a webhook of ep's org. It is best effort: a store too full
// to take it must not hold the answer up long.
func (h *Handler) quotaNotice(ctx context.Context, ep intake.Endpoint) {
	now := h.cfg.Clock.Now()
	h.quotaMu.Lock()
	if last, ok := h.quotaAt[ep.OrgID]; ok && now.Sub(last) < quotaNoticeEvery {
		h.quotaMu.Unlock()
		return
	}
	if h.quotaAt == nil || len(h.quotaAt) > 10000 {
		h.quotaAt = map[string]time.Time{}
	}
	h.quotaAt[ep.OrgID] = now
	h.quotaMu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	n := intake.Notice{ID: intake.NewID(), OrgID: ep.OrgID, Topic: intake.NoticeStorageQuota, Subject: "storage",
		Detail: "webhooks are refused (503): the store holds " + strconv.FormatInt(h.cfg.Quota.Used(), 10) +
			" bytes, the quota is " + strconv.FormatInt(h.cfg.Quota.Limit, 10), At: now.UTC()}
	if err := h.cfg.Store.InsertNotice(ctx, n); err != nil {
		h.cfg.Logger.Warn("ingress: could not record the storage quota notice", "err", err)
	}
}
