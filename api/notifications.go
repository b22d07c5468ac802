package api

import (
	"net/http"

	"github.com/intakehq/intake/control"
)

// putNotifications sets where an org's notifications go.
func (s *Server) putNotifications(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req NotificationsRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	version, err := ifMatch(r)
	if err != nil {
		return err
	}
	n, err := s.ctl.PutNotifications(r.Context(), who, id, control.NotificationUpdate{URL: req.URL, SlackURL: req.SlackWebhookURL,
		Topics: req.Topics, Version: version})
	if err != nil {
		return err
	}
	setETag(w, n.Version)
	writeJSON(w, http.StatusOK, notificationsView(n))
	return nil
}

func (s *Server) getNotifications(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	n, err := s.ctl.Notifications(r.Context(), who, id)
	if err != nil {
		return err
	}
	setETag(w, n.Version)
	writeJSON(w, http.StatusOK, notificationsView(n))
	return nil
}

func notificationsView(n control.NotificationSettings) Notifications {
	return Notifications{URL: n.URL, SlackWebhookURL: n.SlackURL, Topics: n.Topics, SigningSecret: n.SigningSecret}
}
