package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// BodyURLTTL is how long a signed raw-body address works.
const BodyURLTTL = 5 * time.Minute

// createBodyURL signs a short-lived address for a message's raw body, for
// tools that should not hold an API key.
func (s *Server) createBodyURL(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	m, err := s.store.Message(r.Context(), sc, id)
	if err != nil {
		return err
	}
	if m.BodyExpired {
		return intake.Errorf(intake.ENOTFOUND, "the body of message %s has expired", m.ID)
	}
	// Whole seconds, so the expiry in the address is the one reported.
	expires := s.clock.Now().Add(BodyURLTTL).Truncate(time.Second).UTC()
	writeJSON(w, http.StatusOK, BodyURL{
		URL:       s.publicURL + "/body/" + s.signBody(m.ID, expires),
		ExpiresAt: expires,
	})
	return nil
}

// serveSignedBody serves a raw body to whoever holds a valid, unexpired
// signed address. Every refusal is the same bare 404, so the address
// reveals nothing about why.
func (s *Server) serveSignedBody(w http.ResponseWriter, r *http.Request) {
	id, ok := s.openBody(r.PathValue("signed"))
	if !ok {
		http.NotFound(w, r)
		return
	}
	// The signature is the authorisation: it was made in the caller's scope.
	body, header, err := s.store.MessageBody(r.Context(), intake.Scope{}, id)
	if err != nil {
		if intake.ErrorCode(err) != intake.ENOTFOUND {
			s.log.Error("signed body", "message_id", id, "err", err)
		}
		http.NotFound(w, r)
		return
	}
	writeBody(w, body, header)
}

// signBody returns "<message id>.<expiry unix seconds>.<mac>".
func (s *Server) signBody(id string, expires time.Time) string {
	payload := id + "." + strconv.FormatInt(expires.Unix(), 10)
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.bodyMAC(payload))
}

// openBody checks a signed address and returns its message id while it is
// unexpired.
func (s *Server) openBody(signed string) (string, bool) {
	i := strings.LastIndexByte(signed, '.')
	if i < 0 {
		return "", false
	}
	payload := signed[:i]
	mac, err := base64.RawURLEncoding.DecodeString(signed[i+1:])
	if err != nil || !hmac.Equal(mac, s.bodyMAC(payload)) {
		return "", false
	}
	id, exp, ok := strings.Cut(payload, ".")
	if !ok || !intake.ValidID(id) {
		return "", false
	}
	unix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || !s.clock.Now().Before(time.Unix(unix, 0)) {
		return "", false
	}
	return id, true
}

func (s *Server) bodyMAC(payload string) []byte {
	m := hmac.New(sha256.New, s.bodyURLKey)
	m.Write([]byte("intake body url v1\x00" + payload))
	return m.Sum(nil)
}
