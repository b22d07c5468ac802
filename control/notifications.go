package control

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/redact"
)

// NotificationSettings is where an org's operational notifications go, as
// an operator sees it: the Slack URL masked, the signing secret only in
// the answer to the first put.
type NotificationSettings struct {
	URL string
	// SlackURL is masked: its scheme and host, the secret path hidden.
	SlackURL      string
	Topics        []string
	SigningSecret string
	// Version counts the settings' changes (0: none set).
	Version int64
}

// NotificationUpdate is what PutNotifications sets: every setting, as
// given ("" for none).
type NotificationUpdate struct {
	URL      string
	SlackURL string
	Topics   []string
	// KeepSlack keeps the Slack URL already set (SlackURL is then
	// ignored): a form that cannot show the credential need not ask for
	// it again.
	KeepSlack bool
	// Version, when not 0, is the version the caller read (If-Match): the
	// put is refused if the settings changed since.
	Version int64
}

// PutNotifications sets where an org's notifications go. The first put
// mints the signing secret the URL's notifications are signed with and
// returns it, once; later puts keep it.
func (p *Plane) PutNotifications(ctx context.Context, c Caller, orgID string, u NotificationUpdate) (NotificationSettings, error) {
	if err := c.may(intake.RoleAdmin); err != nil {
		return NotificationSettings{}, err
	}
	if err := intake.CheckID("id", orgID); err != nil {
		return NotificationSettings{}, err
	}
	if !c.Scope.Allows(orgID) {
		return NotificationSettings{}, intake.Errorf(intake.ENOTFOUND, "org %s not found", orgID)
	}
	topics, err := checkTopics(u.Topics)
	if err != nil {
		return NotificationSettings{}, err
	}
	if u.KeepSlack {
		u.SlackURL = "" // the stored one, read below, was checked when it was set
	}
	if err := checkSlackURL(u.SlackURL); err != nil {
		return NotificationSettings{}, err
	}
	if u.URL != "" {
		if err := p.checkURL(ctx, u.URL); err != nil {
			return NotificationSettings{}, err
		}
	}
	if u.SlackURL != "" {
		if err := p.checkURL(ctx, u.SlackURL); err != nil {
			return NotificationSettings{}, intake.Errorf(intake.EINVALID, "slack_webhook_url: %s", intake.ErrorMessage(err))
		}
	}
	return compareAndSet(u.Version, func() (NotificationSettings, error) { return p.putNotifications(ctx, c, orgID, u, topics) })
}

// putNotifications writes the checked settings over the version it reads.
func (p *Plane) putNotifications(ctx context.Context, c Caller, orgID string, u NotificationUpdate, topics []string) (NotificationSettings, error) {
	old, err := p.store.NotificationSettings(ctx, c.Scope, orgID)
	first := intake.ErrorCode(err) == intake.ENOTFOUND
	if err != nil && !first {
		return NotificationSettings{}, err
	}
	if err := checkVersion("notification settings", u.Version, old.Version); err != nil {
		return NotificationSettings{}, err
	}
	slackURL := u.SlackURL
	if u.KeepSlack && !first {
		if slackURL, err = p.sealer.NotificationSlackURL(old); err != nil {
			return NotificationSettings{}, fmt.Errorf("open the Slack URL of org %s: %w", orgID, err)
		}
	}
	s := intake.NotificationSettings{OrgID: orgID, SealedSlackURL: p.sealer.SealNotificationSlackURL(orgID, slackURL),
		Topics: topics, SealedSecret: old.SealedSecret, UpdatedAt: p.now(), Version: old.Version}
	if err := p.setNotificationURL(&s, old, u.URL); err != nil {
		return NotificationSettings{}, err
	}
	var secret string
	if first {
		secret = delivery.NewSecret()
		s.SealedSecret = p.sealer.SealNotificationSecret(orgID, secret)
	}
	slack := "none"
	if slackURL != "" {
		slack = maskSlackURL(slackURL)
	}
	a := p.entry(c, orgID, "notifications.update", "org", orgID,
		fmt.Sprintf("url=%s slack_webhook_url=%s topics=%s", s.URL, slack, strings.Join(topics, ",")))
	if err := p.store.PutNotificationSettings(ctx, c.Scope, s, a); err != nil {
		return NotificationSettings{}, err
	}
	return NotificationSettings{URL: s.URL, SlackURL: maskSlackURL(slackURL), Topics: topics, SigningSecret: secret, Version: old.Version + 1}, nil
}

// setNotificationURL sets where s's notifications are posted. A url that
// carries credentials is sealed whole, bound to the org, and shown with
// them as *** (redact.URL), as a consumer's is; the url given back as
// read keeps the one sealed in old.
func (p *Plane) setNotificationURL(s *intake.NotificationSettings, old intake.NotificationSettings, raw string) error {
	if raw != "" && raw == old.URL && len(old.SealedURL) > 0 {
		whole, err := p.sealer.NotificationURL(old)
		if err != nil {
			return fmt.Errorf("open the notification URL of org %s: %w", s.OrgID, err)
		}
		raw = whole
	}
	s.URL, s.SealedURL = redact.URL(raw), nil
	if s.URL != raw {
		s.SealedURL = p.sealer.SealNotificationURL(s.OrgID, raw)
	}
	return nil
}

// Notifications returns where an org's notifications go; ENOTFOUND until
// they are set.
func (p *Plane) Notifications(ctx context.Context, c Caller, orgID string) (NotificationSettings, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return NotificationSettings{}, err
	}
	if err := intake.CheckID("id", orgID); err != nil {
		return NotificationSettings{}, err
	}
	s, err := p.store.NotificationSettings(ctx, c.Scope, orgID)
	if err != nil {
		return NotificationSettings{}, err
	}
	slack, err := p.sealer.NotificationSlackURL(s)
	if err != nil {
		return NotificationSettings{}, fmt.Errorf("open the Slack URL of org %s: %w", orgID, err)
	}
	return NotificationSettings{URL: s.URL, SlackURL: maskSlackURL(slack), Topics: s.Topics, Version: s.Version}, nil
}

// checkTopics refuses an unknown topic and returns the topics without
// repeats, in the order given.
func checkTopics(topics []string) ([]string, error) {
	out := []string{}
	for i, t := range topics {
		if !slices.Contains(intake.NoticeTopics, t) {
			return nil, intake.Errorf(intake.EINVALID, "topics[%d]: unknown topic %.64q (one of %s)", i, t, strings.Join(intake.NoticeTopics, ", "))
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// checkSlackURL requires an https URL: it carries its own credential.
func checkSlackURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.User != nil {
		return intake.Errorf(intake.EINVALID, "slack_webhook_url must be an https URL (https://hooks.slack.com/services/…)")
	}
	if len(raw) > maxConsumerURL {
		return intake.Errorf(intake.EINVALID, "slack_webhook_url must be at most %d bytes", maxConsumerURL)
	}
	return nil
}

// maskSlackURL shows a Slack URL's scheme and host and hides its path,
// which is the credential; "" stays "".
func maskSlackURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "…"
	}
	return u.Scheme + "://" + u.Host + "/…"
}
