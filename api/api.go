// Package api serves the admin API: JSON under /api/v1 for operators and
// the CLI, authorised by the staff token (every org) or an org's API key
// (that org alone), plus the signed raw-body addresses under /body/.
package api

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/bodyurl"
)

// maxRequestBody bounds every JSON request body.
const maxRequestBody = 1 << 20

// Config is what the admin API needs. Store and PublicURL are required, and
// Control or Sealer; the rest have working zero values.
type Config struct {
	// Control performs every operator action and read; required.
	Control *control.Plane
	// Wakes tells the event stream that events committed (the store's
	// Listen); required.
	Wakes     intake.Listener
	PublicURL string // e.g. "http://localhost:8080"
	Clock     intake.Clock
	// BodyURLKey signs raw-body addresses. Empty: a random key, so the
	// addresses only work on this process.
	BodyURLKey []byte
	Logger     *slog.Logger
}

// Server is the admin API: a transport over the control plane, which
// performs every operator action and read. The store itself serves only
// the signed raw-body addresses (the signature, not an operator, is the
// authorisation) and the event stream's wake-ups.
type Server struct {
	ctl       *control.Plane
	wakes     intake.Listener
	publicURL string
	clock     intake.Clock
	bodyURLs  bodyurl.Signer
	log       *slog.Logger
	mux       *http.ServeMux
	patterns  []string
	public    []string      // patterns served without a token
	closing   chan struct{} // closed by CloseStreams
	closeOnce sync.Once
}

// CloseStreams ends every open event stream, so a shutdown does not wait
// for clients that never hang up; they reconnect elsewhere and resume.
func (s *Server) CloseStreams() { s.closeOnce.Do(func() { close(s.closing) }) }

// Routes lists the authenticated routes' patterns, so a test can prove
// each one keeps orgs apart.
func (s *Server) Routes() []string { return append([]string(nil), s.patterns...) }

// PublicRoutes lists the patterns served without a token, so a test can
// prove the OpenAPI document describes every route.
func (s *Server) PublicRoutes() []string { return append([]string(nil), s.public...) }

// New returns the admin API for cfg.
func New(cfg Config) *Server {
	s := &Server{
		ctl:       cfg.Control,
		wakes:     cfg.Wakes,
		publicURL: strings.TrimRight(cfg.PublicURL, "/"),
		clock:     cfg.Clock,
		bodyURLs:  bodyurl.Signer{Key: cfg.BodyURLKey, PublicURL: cfg.PublicURL},
		log:       cfg.Logger,
		mux:       http.NewServeMux(),
		closing:   make(chan struct{}),
	}
	if s.ctl == nil || s.wakes == nil {
		panic("api: Config.Control and Config.Wakes are required")
	}
	if s.clock == nil {
		s.clock = intake.SystemClock{}
	}
	if len(s.bodyURLs.Key) == 0 {
		s.bodyURLs.Key = make([]byte, 32)
		if _, err := rand.Read(s.bodyURLs.Key); err != nil {
			panic(err) // crypto/rand never fails on supported platforms
		}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.routes()
	return s
}

// Handler serves /api/v1/…, GET /api/v1/openapi.json and GET /body/{signed}.
func (s *Server) Handler() http.Handler { return s.mux }

func (s *Server) routes() {
	s.handle("POST /api/v1/orgs", s.createOrg)
	s.handle("GET /api/v1/orgs", s.listOrgs)
	s.handle("GET /api/v1/orgs/{id}", s.getOrg)
	s.handle("PATCH /api/v1/orgs/{id}", s.updateOrg)
	s.handle("DELETE /api/v1/orgs/{id}", s.deleteOrg)
	s.handle("PUT /api/v1/orgs/{id}/notifications", s.putNotifications)
	s.handle("GET /api/v1/orgs/{id}/notifications", s.getNotifications)

	s.handle("POST /api/v1/connections", s.createConnection)
	s.handle("GET /api/v1/connections", s.listConnections)
	s.handle("GET /api/v1/connections/{id}", s.getConnection)
	s.handle("PATCH /api/v1/connections/{id}", s.updateConnection)
	s.handle("PUT /api/v1/connections/{id}/secrets", s.replaceSecrets)
	s.handle("POST /api/v1/connections/{id}/adopt-handshake-secret", s.adoptHandshakeSecret)

	s.handle("POST /api/v1/endpoints", s.createEndpoint)
	s.handle("GET /api/v1/endpoints", s.listEndpoints)
	s.handle("GET /api/v1/endpoints/{id}", s.getEndpoint)
	s.handle("PATCH /api/v1/endpoints/{id}", s.updateEndpoint)
	s.handle("POST /api/v1/endpoints/{id}/rotate", s.rotateEndpoint)

	s.handle("GET /api/v1/messages", s.listMessages)
	s.handle("GET /api/v1/messages/{id}", s.getMessage)
	s.handle("GET /api/v1/messages/{id}/body", s.getMessageBody)
	s.handle("POST /api/v1/messages/{id}/body-url", s.createBodyURL)

	s.handle("GET /api/v1/events", s.listEvents)
	s.handle("GET /api/v1/events/{id}", s.getEvent)
	s.handle("GET /api/v1/unclaimed", s.listUnclaimed)
	s.handle("GET /api/v1/event-types", s.listEventTypes)
	s.handle("GET /api/v1/event-types/{type}", s.getEventType)
	s.handle("GET /api/v1/asyncapi.json", s.getAsyncAPI)

	s.handle("POST /api/v1/consumers", s.createConsumer)
	s.handle("GET /api/v1/consumers", s.listConsumers)
	s.handle("GET /api/v1/consumers/{id}", s.getConsumer)
	s.handle("PATCH /api/v1/consumers/{id}", s.updateConsumer)
	s.handle("POST /api/v1/consumers/{id}/rotate-secret", s.rotateConsumerSecret)
	s.handle("POST /api/v1/consumers/{id}/pause", s.pauseConsumer)
	s.handle("POST /api/v1/consumers/{id}/resume", s.resumeConsumer)
	s.handle("GET /api/v1/consumers/{id}/health", s.consumerHealth)
	s.handle("POST /api/v1/consumers/{id}/test", s.testConsumer)
	s.handle("POST /api/v1/consumers/{id}/retry", s.retryConsumer)
	s.handle("GET /api/v1/consumers/{id}/stats", s.consumerStats)

	s.handle("POST /api/v1/subject-links", s.createSubjectLink)
	s.handle("POST /api/v1/rules/test", s.testRule)

	s.handle("POST /api/v1/messages/{id}/replay", s.replayMessage)
	s.handle("POST /api/v1/messages/replay", s.replayMessages)
	s.handle("POST /api/v1/endpoints/{id}/replay", s.replayWindow)
	s.handle("GET /api/v1/replays/{id}", s.getReplay)
	s.handle("POST /api/v1/events/{id}/reroute", s.rerouteEvent)
	s.handle("POST /api/v1/events/reroute", s.rerouteEvents)
	s.handle("POST /api/v1/events/{id}/retry", s.retryEvent)
	s.handle("GET /api/v1/events/stream", s.streamEvents)
	s.handle("GET /api/v1/issues", s.listIssues)
	s.handle("GET /api/v1/issues/{id}", s.getIssue)
	s.handle("PATCH /api/v1/issues/{id}", s.updateIssue)
	s.handle("POST /api/v1/issues/{id}/retry", s.retryIssue)
	s.handle("GET /api/v1/audit", s.listAudit)
	s.handle("POST /api/v1/keys", s.createKey)
	s.handle("GET /api/v1/keys", s.listKeys)
	s.handle("DELETE /api/v1/keys/{id}", s.revokeKey)
	s.handle("DELETE /api/v1/connections/{id}", s.deleteHandler(intake.DeleteConnection))
	s.handle("DELETE /api/v1/endpoints/{id}", s.deleteHandler(intake.DeleteEndpoint))
	s.handle("DELETE /api/v1/consumers/{id}", s.deleteHandler(intake.DeleteConsumer))
	s.handle("DELETE /api/v1/endpoints/{id}/bodies", s.eraseBodies)
	s.handle("POST /api/v1/apply", s.applyDocument)
	s.handle("GET /api/v1/export", s.exportDocument)

	// The signature in the address is the authorisation.
	s.handlePublic("GET /body/{signed}", s.serveSignedBody)
	// The API's description is public information, like its documentation.
	s.handlePublic("GET /api/v1/openapi.json", serveOpenAPI)
}

// handlePublic serves a route that needs no token.
func (s *Server) handlePublic(pattern string, h http.HandlerFunc) {
	s.public = append(s.public, pattern)
	s.mux.HandleFunc(pattern, h)
}

// apiFunc is an admin API handler: it runs for an authenticated caller and
// returns its error for writeError to answer.
type apiFunc func(w http.ResponseWriter, r *http.Request, who control.Caller) error

func (s *Server) handle(pattern string, h apiFunc) {
	s.patterns = append(s.patterns, pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		// Answers carry API keys, tokens and request data: never cache them.
		w.Header().Set("Cache-Control", "no-store")
		who, err := s.authenticate(r)
		if err == nil {
			err = h(w, r, who)
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}

// authenticate reads the bearer token for the control plane to judge.
func (s *Server) authenticate(r *http.Request) (control.Caller, error) {
	auth := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(auth, " ")
	if auth == "" {
		return control.Caller{}, intake.Errorf(intake.EUNAUTHORIZED, "missing bearer token")
	}
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return control.Caller{}, intake.Errorf(intake.EUNAUTHORIZED, "authorization must be a bearer token")
	}
	return s.ctl.Authenticate(r.Context(), control.Client(r), tok)
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := intake.ErrorCode(err)
	status := control.HTTPStatus(err)
	msg := intake.ErrorMessage(err)
	switch status {
	case http.StatusInternalServerError:
		s.log.Error("admin api", "method", r.Method, "path", r.URL.Path, "err", err)
		code, msg = intake.EINTERNAL, "internal error"
	case http.StatusServiceUnavailable:
		s.log.Warn("admin api: storage unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", control.RetryAfter(err))
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", control.RetryAfter(err))
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="intake"`)
	}
	writeJSON(w, status, ErrorBody{Error: ErrorDetail{Code: code, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client went away; nothing left to tell it
}

// decode reads one JSON object of at most maxRequestBody bytes into v,
// refusing unknown fields so a misspelt option is not silently dropped.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeFrom(http.MaxBytesReader(w, r.Body, maxRequestBody), v)
}

// readBody reads a request body whole, within the API's limit, for a
// handler that looks at it twice (decodeBytes, isNull).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		return nil, decodeError(err)
	}
	return b, nil
}

func decodeBytes(b []byte, v any) error { return decodeFrom(bytes.NewReader(b), v) }

// isNull reports whether the JSON object b sets field to null, which a
// pointer field cannot tell from its absence.
func isNull(b []byte, field string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	v, ok := m[field]
	return ok && string(bytes.TrimSpace(v)) == "null"
}

func decodeFrom(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return intake.Errorf(intake.EINVALID, "request body must hold one JSON object")
	}
	return nil
}

func decodeError(err error) error {
	var (
		tooLarge *http.MaxBytesError
		syntax   *json.SyntaxError
		typ      *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &tooLarge):
		return intake.Errorf(intake.ETOOLARGE, "request body exceeds %d bytes", tooLarge.Limit)
	case errors.Is(err, io.EOF):
		return intake.Errorf(intake.EINVALID, "request body must be a JSON object")
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return intake.Errorf(intake.EINVALID, "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	case errors.As(err, &typ):
		if typ.Field == "" {
			return intake.Errorf(intake.EINVALID, "request body must be a JSON object")
		}
		return intake.Errorf(intake.EINVALID, "%s must be %s", typ.Field, jsonKind(typ.Type.Kind().String()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return intake.Errorf(intake.EINVALID, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return intake.Errorf(intake.EINVALID, "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names a Go kind the way a JSON author thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "int", "int64", "int32":
		return "an integer"
	case "float64", "float32":
		return "a number"
	}
	return "of another type"
}

// pathID returns the {id} path value, refusing a malformed one before it
// reaches a query.
func pathID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !intake.ValidID(id) {
		return "", intake.Errorf(intake.EINVALID, "malformed id %.64q: want a UUID", id)
	}
	return id, nil
}
