package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/intakehq/intake/api"
)

// NotificationsCmd sets where an org's operational notifications go.
type NotificationsCmd struct {
	Set  NotificationsSetCmd  `cmd:"" help:"Set the notification URL, Slack webhook and topics (every setting, as given); the first time prints the signing secret, shown once."`
	Show NotificationsShowCmd `cmd:"" help:"Show where the org's notifications go (the Slack URL masked)."`
}

// NotificationsSetCmd puts an org's notification settings.
type NotificationsSetCmd struct {
	Org      string   `name:"org" help:"Org id (required with the staff token)."`
	URL      string   `name:"url" aliases:"notify-url" help:"Where signed JSON notifications are posted (Standard Webhooks)."`
	SlackURL string   `name:"slack-url" help:"A Slack incoming-webhook URL (https) for readable messages."`
	Topic    []string `name:"topic" sep:"none" help:"A topic to send (message.dead, event.dead, consumer.tripped, consumer.recovered, consumer.disabled, signature.failures, storage.quota, schema.changed, issue.opened, issue.reopened, issue.resolved); repeat for several."`
	outputFlags
}

// Run puts the settings and prints the answer.
func (c *NotificationsSetCmd) Run(cl *Client) error {
	org, err := cl.orgID(c.Org)
	if err != nil {
		return err
	}
	raw, err := cl.call(http.MethodPut, idPath("/api/v1/orgs", org, "/notifications"), nil,
		api.NotificationsRequest{URL: c.URL, SlackWebhookURL: c.SlackURL, Topics: c.Topic})
	if err != nil {
		return err
	}
	if err := cl.print(c.outputFlags, raw); err != nil {
		return err
	}
	var out api.Notifications
	if json.Unmarshal(raw, &out) == nil && out.SigningSecret != "" {
		_, err = fmt.Fprintln(cl.stderr(), "intake: store the signing_secret now; it will not be shown again.")
	}
	return err
}

// NotificationsShowCmd shows an org's notification settings.
type NotificationsShowCmd struct {
	outputFlags
	Org string `name:"org" help:"Org id (required with the staff token)."`
}

// Run prints the settings.
func (c *NotificationsShowCmd) Run(cl *Client) error {
	org, err := cl.orgID(c.Org)
	if err != nil {
		return err
	}
	return cl.show(c.outputFlags, idPath("/api/v1/orgs", org, "/notifications"))
}

// orgID is the org a command acts in: the one given, or the only org the
// token sees (an org's API key sees its own).
func (cl *Client) orgID(given string) (string, error) {
	if given != "" {
		return given, nil
	}
	var orgs api.List[api.Org]
	if _, err := cl.get("/api/v1/orgs", nil, &orgs); err != nil {
		return "", err
	}
	if len(orgs.Items) != 1 {
		return "", errors.New("--org is required: the token sees more than one org")
	}
	return orgs.Items[0].ID, nil
}
