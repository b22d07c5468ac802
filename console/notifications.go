package console

import (
	"net/http"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

// notificationsView is the notifications page: where an org's operational
// notifications go, and the signing secret the first save minted.
type notificationsView struct {
	Orgs     orgChoice
	OrgID    string
	Set      bool
	Current  control.NotificationSettings
	Topics   []topicChoice
	Secret   string
	Previous string // the masked Slack URL kept when the field is left empty
}

type topicChoice struct {
	Name    string
	Checked bool
}

func (c *Console) notifications(w http.ResponseWriter, r *http.Request, s *session) error {
	orgID := s.OrgID
	if s.staff {
		orgID = r.URL.Query().Get("org")
	}
	return c.renderNotifications(w, r, s, orgID, "")
}

func (c *Console) renderNotifications(w http.ResponseWriter, r *http.Request, s *session, orgID, secret string) error {
	oc, err := c.orgChoice(r.Context(), s)
	if err != nil {
		return err
	}
	v := notificationsView{Orgs: oc, OrgID: orgID, Secret: secret}
	if orgID != "" {
		cur, err := c.ctl.Notifications(r.Context(), s.caller(), orgID)
		switch {
		case err == nil:
			v.Set, v.Current = true, cur
		case intake.ErrorCode(err) != intake.ENOTFOUND:
			return err
		}
	}
	for _, t := range intake.NoticeTopics {
		checked := false
		for _, have := range v.Current.Topics {
			checked = checked || have == t
		}
		v.Topics = append(v.Topics, topicChoice{Name: t, Checked: checked})
	}
	c.render(w, r, s, http.StatusOK, "notifications", "Notifications", v)
	return nil
}

// saveNotifications puts the form's settings through the control plane;
// an empty Slack field keeps the Slack URL already set unless "remove" is
// ticked. The first save shows the signing secret, this once.
func (c *Console) saveNotifications(w http.ResponseWriter, r *http.Request, s *session) error {
	orgID, err := formOrg(r, s)
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return intake.Errorf(intake.EINVALID, "the form could not be read")
	}
	u := control.NotificationUpdate{URL: r.PostFormValue("url"), SlackURL: r.PostFormValue("slack_webhook_url"), Topics: r.PostForm["topic"]}
	if u.Topics == nil {
		u.Topics = []string{}
	}
	u.KeepSlack = u.SlackURL == "" && r.PostFormValue("remove_slack") != "on"
	if u.Version, err = formVersion(r); err != nil {
		return err
	}
	got, err := c.ctl.PutNotifications(r.Context(), s.caller(), orgID, u)
	if err != nil {
		return err
	}
	if got.SigningSecret != "" {
		return c.renderNotifications(w, r, s, orgID, got.SigningSecret)
	}
	q := "?flash=notifications-saved"
	if s.staff {
		q += "&org=" + orgID
	}
	return redirect(w, r, "/console/notifications"+q)
}
