package api

import (
	"net/http"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/bodyurl"
	"github.com/intakehq/intake/internal/rawbody"
)

// BodyURLTTL is how long a signed raw-body address works.
const BodyURLTTL = bodyurl.TTL

// createBodyURL signs a short-lived address for a message's raw body, for
// tools that should not hold an API key.
func (s *Server) createBodyURL(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	m, err := s.ctl.Message(r.Context(), who, id)
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
	body, size, header, err := s.ctl.OpenMessageBody(r.Context(), control.Caller{Actor: "signed body address"}, id)
	if err != nil {
		if intake.ErrorCode(err) != intake.ENOTFOUND {
			s.log.Error("signed body", "message_id", id, "err", err)
		}
		http.NotFound(w, r)
		return
	}
	defer body.Close()
	rawbody.Stream(w, body, size, header, "")
}

func (s *Server) signBody(id string, expires time.Time) string {
	return s.bodyURLs.Sign(id, expires)
}

func (s *Server) openBody(signed string) (string, bool) {
	return s.bodyURLs.Open(signed, s.clock.Now())
}
