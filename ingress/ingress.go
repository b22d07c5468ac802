// Package ingress receives webhooks at /webhooks/{token}: it finds the
// endpoint, enforces its limits, commits the request durably through the
// store, and only then answers.
package ingress

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
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
	"github.com/intakehq/intake/internal/fair"
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
	// StoreWait bounds a lookup ingress waits on (an endpoint, a
	// connection's secrets) when the store is slow or unreachable
	// (default 5s): past it the webhook is answered 503, within the time
	// a provider waits.
	StoreWait time.Duration
	// Handoff, when set, is the local worker's: while it has room, a
	// message commits under its first lease and goes straight to the
	// worker, with the body it arrived with.
	Handoff *handoff.Messages
	// Pressure, when set, counts the requests waiting for their commit,
	// for processing to yield to them under a burst.
	Pressure *pressure.Gauge
	// Blobs, when set, takes every body larger than BlobThreshold (default
	// intake.DefaultBlobThreshold): the body streams into its object
	// before the message commits, and the message names the object.
	Blobs         intake.Blobs
	BlobThreshold int64
	// MaxBodyBytes caps every endpoint's max_body_bytes (--max-body-bytes),
	// endpoints stored with more before it was set included; 0: each
	// endpoint's own.
	MaxBodyBytes int64
	// BodyMemory, when set, is shared by the bodies being read into memory
	// (--body-memory), each org at most its fair share: a body is charged
	// what its in-memory read may take before a byte is read, until its
	// commit. One that does not fit waits the budget's Wait, then is
	// answered 503 with Retry-After.
	BodyMemory *fair.Budget
	// Replica, when set, is the replica an acknowledgement waits for
	// (--replicate-sync): a webhook is answered 200 only once its commit
	// is in the replica; 503 with Retry-After when the replica cannot be
	// reached, or does not take it within ReplicaWait (default 5s).
	Replica     Replica
	ReplicaWait time.Duration
}

// Replica ships commits off the machine (replica.Replicator).
type Replica interface {
	// Sync returns once every commit made before it was called is in the
	// replica; callers waiting at once share one sync.
	Sync(ctx context.Context) error
}

// replicaRetryAfter is how soon a webhook refused for its replica is
// asked to come again.
const replicaRetryAfter = 10 * time.Second

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
	if cfg.StoreWait <= 0 {
		cfg.StoreWait = 5 * time.Second
	}
	if cfg.BlobThreshold <= 0 {
		cfg.BlobThreshold = intake.DefaultBlobThreshold
	}
	if cfg.ReplicaWait <= 0 {
		cfg.ReplicaWait = 5 * time.Second
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

// Answers carry no ids, errors, secrets or paths.
var (
	bodyReceived    = []byte(`{"ok":true}` + "\n")
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
	limit := ep.MaxBodyBytes
	if h.cfg.MaxBodyBytes > 0 {
		limit = min(limit, h.cfg.MaxBodyBytes)
	}
	if r.ContentLength > limit {
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
		setRetryAfter(w, retryAfter)
		answer(w, http.StatusTooManyRequests, bodyRateLimited)
		return "rate_limited"
	}
	m := newMessage(ep, r, now)
	release, result := h.receiveBody(w, r, ep, limit, m)
	if result != "" {
		return result
	}
	traceMessage(r.Context(), m)
	// A handshake is small: a body in object storage is never one.
	var challenge provider.Challenge
	var isChallenge bool
	if m.BlobKey == "" {
		challenge, isChallenge = h.challenge(r.Context(), ep, m, h.publicURL(r), now)
	}
	handed := h.cfg.Handoff.Reserve(m)
	start := time.Now()
	h.cfg.Pressure.Enter()
	err = h.cfg.Store.Ingest(context.WithoutCancel(r.Context()), m)
	h.cfg.Pressure.Leave()
	release()
	if err != nil {
		if handed {
			h.cfg.Handoff.Cancel(m.OrgID)
		}
		// A body's object stays: the commit may have happened all the
		// same (its answer lost), and a message must never name an object
		// that is not there. The sweeper deletes it if no message does.
		h.cfg.Logger.Error("ingress: commit failed; not acknowledged", "endpoint_id", ep.ID, "err", err)
		answer(w, http.StatusServiceUnavailable, bodyUnavailable)
		return "storage"
	}
	h.cfg.Metrics.IngestSeconds.Observe(time.Since(start).Seconds())
	if handed {
		h.cfg.Handoff.Give(m)
		h.cfg.Metrics.HandedOver.Inc()
	}
	if h.cfg.Replica != nil {
		// Committed here, but acknowledged only once off the machine:
		// the provider retries what is refused, and the retry is a
		// duplicate if this commit reaches the replica after all.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), h.cfg.ReplicaWait)
		err := h.cfg.Replica.Sync(rctx)
		cancel()
		if err != nil {
			h.cfg.Logger.Warn("ingress: the replica does not hold the commit; not acknowledged", "endpoint_id", ep.ID, "err", err)
			setRetryAfter(w, replicaRetryAfter)
			answer(w, http.StatusServiceUnavailable, bodyUnavailable)
			return "replica"
		}
	}
	if isChallenge {
		for k, v := range challenge.Header {
			w.Header()[k] = v
		}
		if challenge.ContentType != "" {
			w.Header().Set("Content-Type", challenge.ContentType)
		}
		// The answer echoes what the caller sent: never to be sniffed as
		// HTML, whatever it holds.
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(challenge.Status)
		w.Write(challenge.Body)
		return "challenge"
	}
	answer(w, http.StatusOK, bodyReceived)
	return "accepted"
}

func newMessage(ep intake.Endpoint, r *http.Request, now time.Time) *intake.Message {
	header := r.Header.Clone()
	for _, k := range hopByHop {
		header.Del(k)
	}
	if r.Host != "" {
		header.Set("Host", r.Host)
	}
	return &intake.Message{
		ID:            intake.NewID(),
		OrgID:         ep.OrgID,
		ConnectionID:  ep.ConnectionID,
		EndpointID:    ep.ID,
		Method:        r.Method,
		Query:         r.URL.RawQuery,
		Header:        header,
		ReceivedAt:    now,
		State:         intake.MessageQueued,
		MaxAttempts:   intake.DefaultMaxAttempts,
		NextAttemptAt: now,
	}
}

var bodyIncomplete = []byte(`{"error":"incomplete body"}` + "\n")

// receiveBody reads the request's body into m: into memory when it is
// small (or there is no blob store), else streaming into its object, so a
// large body is never held whole. Before it reads, it takes from the body
// memory budget what the in-memory read may hold; release gives it back.
// The digest is computed as the body passes. It answers and returns the
// result when the body is refused.
func (h *Handler) receiveBody(w http.ResponseWriter, r *http.Request, ep intake.Endpoint, limit int64, m *intake.Message) (release func(), result string) {
	first := limit
	if h.cfg.Blobs != nil {
		first = min(limit, h.cfg.BlobThreshold)
	}
	// What the read may hold: the length when it is known (the server
	// reads no further), else as much as is read before the body is
	// refused or streams on.
	held, size := first+1, int64(0)
	if r.ContentLength >= 0 {
		held = min(r.ContentLength, held)
		size = held
	}
	release = func() {}
	if held > 0 {
		var err error
		if release, err = h.cfg.BodyMemory.Take(r.Context(), ep.OrgID, held); err != nil {
			retryAfter := time.Second
			var busy *fair.Busy
			if errors.As(err, &busy) {
				retryAfter = busy.RetryAfter
			}
			setRetryAfter(w, retryAfter)
			answer(w, http.StatusServiceUnavailable, bodyUnavailable)
			return nil, "body_memory"
		}
	}
	if result := h.readBody(w, r, ep, limit, first, size, m); result != "" {
		release()
		return nil, result
	}
	return release, ""
}

// readBody reads the body into m, in a buffer of size bytes to begin with
// (the length, when it is known); see receiveBody.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request, ep intake.Endpoint, limit, first, size int64, m *intake.Message) string {
	body, err := readAll(io.LimitReader(r.Body, first+1), size)
	if err != nil {
		// The client went away or timed out mid-body: nothing to keep.
		answer(w, http.StatusBadRequest, bodyIncomplete)
		return "bad_request"
	}
	if int64(len(body)) > limit {
		answer(w, http.StatusRequestEntityTooLarge, bodyTooLarge)
		return "too_large"
	}
	sum := sha256.New()
	sum.Write(body)
	if int64(len(body)) <= first {
		m.Body, m.Digest = body, hex.EncodeToString(sum.Sum(nil))
		return ""
	}
	rest := &remainder{r: r.Body, left: limit - int64(len(body))}
	key := intake.BlobKey(m.ReceivedAt, m.ID)
	err = h.putBlob(r.Context(), key, io.MultiReader(bytes.NewReader(body), io.TeeReader(rest, sum)), r.ContentLength)
	var incomplete *incompleteBody
	switch {
	case errors.Is(err, errTooLarge):
		answer(w, http.StatusRequestEntityTooLarge, bodyTooLarge)
		return "too_large"
	case errors.As(err, &incomplete):
		answer(w, http.StatusBadRequest, bodyIncomplete)
		return "bad_request"
	case err != nil:
		h.cfg.Logger.Error("ingress: object storage failed; a large body is not acknowledged", "endpoint_id", ep.ID, "err", err)
		w.Header().Set("Retry-After", "5")
		answer(w, http.StatusServiceUnavailable, bodyUnavailable)
		return "blob_store"
	}
	m.BlobKey, m.Digest = key, hex.EncodeToString(sum.Sum(nil))
	return ""
}

// putBlob streams body into object storage under key. Object storage
// that takes nothing more of the body, or does not answer once it has it
// all, for StoreWait fails the put, unavailable: the webhook is answered
// 503 within the time a provider waits, rather than when the provider
// hangs up. The time the provider takes to send its body does not count.
func (h *Handler) putBlob(ctx context.Context, key string, body io.Reader, size int64) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watch := newStallWatch(body, h.cfg.StoreWait, cancel)
	defer watch.stop()
	err := h.cfg.Blobs.Put(ctx, key, watch, size)
	if err != nil && errors.Is(context.Cause(ctx), errBlobStalled) {
		return intake.Errorf(intake.EUNAVAILABLE, "object storage stalled for %s: %v", h.cfg.StoreWait, err)
	}
	return err
}

// errBlobStalled is object storage waited on past the store wait.
var errBlobStalled = errors.New("ingress: object storage stalled")

// stallWatch is a body being put to object storage, which cancels the put
// once it has waited on object storage (not on the body) for wait.
type stallWatch struct {
	r      io.Reader
	wait   time.Duration
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	timer   *time.Timer
	reading bool // the put waits on the body, not on object storage
	stopped bool
}

func newStallWatch(r io.Reader, wait time.Duration, cancel context.CancelCauseFunc) *stallWatch {
	w := &stallWatch{r: r, wait: wait, cancel: cancel}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = time.AfterFunc(wait, w.fire)
	return w
}

func (w *stallWatch) Read(p []byte) (int, error) {
	w.mu.Lock()
	w.reading = true
	w.timer.Stop()
	w.mu.Unlock()
	n, err := w.r.Read(p)
	w.mu.Lock()
	w.reading = false
	if !w.stopped {
		w.timer.Reset(w.wait)
	}
	w.mu.Unlock()
	return n, err
}

func (w *stallWatch) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.reading && !w.stopped {
		w.cancel(errBlobStalled)
	}
}

func (w *stallWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.timer.Stop()
}

// setRetryAfter answers Retry-After as d in whole seconds, at least one.
func setRetryAfter(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(max(d, time.Second).Seconds()))))
}

// readAll is io.ReadAll into a buffer of size bytes to begin with (and one
// more, for the read that finds the end), so a body of a known length is
// held once rather than in the doubling buffers io.ReadAll grows.
func readAll(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, max(512, size+1))
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// errTooLarge is a body running past its endpoint's limit while it
// streams.
var errTooLarge = errors.New("ingress: body over the endpoint's limit")

// incompleteBody is the client failing mid-body.
type incompleteBody struct{ err error }

func (e *incompleteBody) Error() string { return "ingress: incomplete body: " + e.err.Error() }
func (e *incompleteBody) Unwrap() error { return e.err }

// remainder reads the rest of a body, at most left bytes of it.
type remainder struct {
	r    io.Reader
	left int64
}

func (b *remainder) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	if int64(n) > b.left {
		return 0, errTooLarge
	}
	b.left -= int64(n)
	if err != nil && err != io.EOF {
		err = &incompleteBody{err}
	}
	return n, err
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
	req := provider.Request{Method: m.Method, URL: publicURL, Header: m.Header, Body: bytes.Clone(m.Body), ReceivedAt: m.ReceivedAt, Org: ep.OrgID}
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
