package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

// ConsumersCmd manages the apps that receive events.
type ConsumersCmd struct {
	Add          ConsumersAddCmd          `cmd:"" help:"Register a consumer and print its signing secret (shown only once)."`
	List         ConsumersListCmd         `cmd:"" help:"List consumers."`
	Show         ConsumersShowCmd         `cmd:"" help:"Show one consumer."`
	Update       ConsumersUpdateCmd       `cmd:"" help:"Change a consumer's name, URL, event types, filter, transform or delivery controls (rate, max in flight, ordering, retries, breaker)."`
	Pause        ConsumersPauseCmd        `cmd:"" help:"Hold a consumer's deliveries: they wait, spend no attempt and never make an event dead."`
	Resume       ConsumersResumeCmd       `cmd:"" help:"Let a paused consumer's held deliveries go, at its rate."`
	Health       ConsumersHealthCmd       `cmd:"" help:"Show how deliveries to a consumer stand: state, last hour, last call, backlog."`
	Retry        ConsumersRetryCmd        `cmd:"" help:"Retry now: every event waiting for the consumer becomes due now (no attempt spent; a tripped consumer gets its probe now); --dry-run to see them first."`
	Test         ConsumersTestCmd         `cmd:"" help:"Deliver a test event (intake.test) to a consumer of any kind and show what it said."`
	RotateSecret ConsumersRotateSecretCmd `cmd:"" name:"rotate-secret" help:"Give a consumer a new signing secret (shown once); the old one keeps signing beside it for a while."`
	Enable       ConsumersEnableCmd       `cmd:"" help:"Send events to a consumer again."`
	Disable      ConsumersDisableCmd      `cmd:"" help:"Stop sending events to a consumer."`
	Delete       ConsumersDeleteCmd       `cmd:"" help:"Delete a consumer (its deliveries stay)."`
}

// ConsumersAddCmd registers a consumer. Its address is --url (the server's
// is --server); --consumer-url is the older name of it.
type ConsumersAddCmd struct {
	outputFlags
	Org        string   `name:"org" help:"Org id (required with the staff token)."`
	Name       string   `name:"name" required:"" help:"Name of the consumer."`
	App        string   `name:"app" required:"" help:"The app it belongs to (subject links name apps)."`
	URL        string   `name:"url" aliases:"consumer-url" required:"" help:"Where events are posted (http or https)."`
	EventType  []string `name:"event-type" required:"" sep:"none" help:"Event type or prefix (stripe.invoice.paid, stripe.invoice.*, *); repeat for several."`
	Completion bool     `name:"completion" help:"Receive the events about records its app initiated."`
	Paused     bool     `name:"paused" help:"Hold its deliveries from the start (resume it to let them go)."`
	Disabled   bool     `name:"disabled" help:"Register it without sending it anything yet (enable it later)."`
	ruleFlags
	controlFlags
}

// Run registers the consumer.
func (c *ConsumersAddCmd) Run(cl *Client) error {
	filter, transform, _, _, err := c.rules()
	if err != nil {
		return err
	}
	ctl, err := c.controls()
	if err != nil {
		return err
	}
	if c.Paused {
		ctl.Paused = &c.Paused
	}
	var enabled *bool
	if c.Disabled {
		enabled = new(bool)
	}
	err = cl.send(c.outputFlags, http.MethodPost, "/api/v1/consumers", api.CreateConsumerRequest{
		ConsumerControls: ctl,
		Enabled:          enabled,
		Filter:           filter,
		Transform:        transform,
		OrgID:            c.Org,
		Name:             c.Name,
		App:              c.App,
		URL:              c.URL,
		EventTypes:       c.EventType,
		Completion:       c.Completion,
	})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(cl.stderr(), "intake: store the signing_secret now; it will not be shown again.")
	return err
}

// ConsumersListCmd lists consumers.
type ConsumersListCmd struct {
	listFlags
}

// Run lists the consumers.
func (c *ConsumersListCmd) Run(cl *Client) error {
	return printList(cl, c.listFlags, "/api/v1/consumers", nil,
		[]string{"ID", "NAME", "APP", "URL", "TYPES", "COMPLETION", "STATE"},
		func(x api.Consumer) []string {
			return []string{x.ID, x.Name, x.App, x.URL, strings.Join(x.EventTypes, ","),
				strconv.FormatBool(x.Completion), x.State}
		})
}

// ConsumersShowCmd shows one consumer.
type ConsumersShowCmd struct {
	outputFlags
	ID string `arg:"" help:"Consumer id."`
}

// Run shows the consumer.
func (c *ConsumersShowCmd) Run(cl *Client) error {
	return cl.show(c.outputFlags, idPath("/api/v1/consumers", c.ID))
}

// ConsumersEnableCmd enables a consumer.
type ConsumersEnableCmd struct {
	outputFlags
	ID string `arg:"" help:"Consumer id."`
}

// Run enables the consumer.
func (c *ConsumersEnableCmd) Run(cl *Client) error {
	return setConsumerEnabled(cl, c.outputFlags, c.ID, true)
}

// ConsumersDisableCmd disables a consumer.
type ConsumersDisableCmd struct {
	outputFlags
	ID string `arg:"" help:"Consumer id."`
}

// Run disables the consumer.
func (c *ConsumersDisableCmd) Run(cl *Client) error {
	return setConsumerEnabled(cl, c.outputFlags, c.ID, false)
}

func setConsumerEnabled(cl *Client, f outputFlags, id string, enabled bool) error {
	return cl.send(f, http.MethodPatch, idPath("/api/v1/consumers", id), api.UpdateConsumerRequest{Enabled: &enabled})
}

// ConsumersPauseCmd pauses a consumer.
type ConsumersPauseCmd struct {
	outputFlags
	ID string `arg:"" help:"Consumer id."`
}

// Run pauses the consumer.
func (c *ConsumersPauseCmd) Run(cl *Client) error {
	return cl.send(c.outputFlags, http.MethodPost, idPath("/api/v1/consumers", c.ID, "/pause"), nil)
}

// ConsumersResumeCmd resumes a paused consumer.
type ConsumersResumeCmd struct {
	outputFlags
	ID string `arg:"" help:"Consumer id."`
}

// Run resumes the consumer.
func (c *ConsumersResumeCmd) Run(cl *Client) error {
	return cl.send(c.outputFlags, http.MethodPost, idPath("/api/v1/consumers", c.ID, "/resume"), nil)
}

// ConsumersHealthCmd shows a consumer's health.
type ConsumersHealthCmd struct {
	outputFlags
	ID string `arg:"" help:"Consumer id."`
}

// Run shows the health.
func (c *ConsumersHealthCmd) Run(cl *Client) error {
	return cl.show(c.outputFlags, idPath("/api/v1/consumers", c.ID, "/health"))
}

// ConsumersTestCmd delivers a test event to a consumer.
type ConsumersTestCmd struct {
	outputFlags
	ID string `arg:"" help:"Consumer id."`
}

// Run delivers the test event and shows what the destination said; it
// fails when the destination did not take it.
func (c *ConsumersTestCmd) Run(cl *Client) error {
	var res api.ConsumerTest
	raw, err := cl.call(http.MethodPost, idPath("/api/v1/consumers", c.ID, "/test"), nil, nil)
	if err != nil {
		return err
	}
	if err := cl.print(c.outputFlags, raw); err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return err
	}
	if res.Outcome != intake.DeliveryHandled && res.Outcome != intake.DeliveryIgnored {
		return fmt.Errorf("the consumer did not take the test event: %s", res.Error)
	}
	return nil
}

// LinksCmd records which app record a provider object belongs to.
type LinksCmd struct {
	Add LinksAddCmd `cmd:"" help:"Link a provider object to an app's record, so its events go to that app's completion consumers."`
}

// LinksAddCmd records a subject link.
type LinksAddCmd struct {
	outputFlags
	Connection string `name:"connection" required:"" help:"Connection id the object lives in."`
	Object     string `name:"object" required:"" help:"Provider object id (e.g. Stripe in_…, a GitHub node id)."`
	App        string `name:"app" required:"" help:"The app that created the object."`
	Record     string `name:"record" required:"" help:"The app's record id."`
}

// Run records the link.
func (c *LinksAddCmd) Run(cl *Client) error {
	return cl.send(c.outputFlags, http.MethodPost, "/api/v1/subject-links", api.CreateSubjectLinkRequest{
		ConnectionID:     c.Connection,
		ProviderObjectID: c.Object,
		App:              c.App,
		RecordID:         c.Record,
	})
}

// ConsumersRotateSecretCmd rotates a consumer's signing secret.
type ConsumersRotateSecretCmd struct {
	outputFlags
	ID         string `arg:"" help:"Consumer id."`
	KeepOldFor string `name:"keep-old-for" default:"24h" help:"How long the old secret keeps signing beside the new one (0s: not at all)."`
}

// Run rotates the secret and prints the new one.
func (c *ConsumersRotateSecretCmd) Run(cl *Client) error {
	if err := cl.send(c.outputFlags, http.MethodPost, idPath("/api/v1/consumers", c.ID, "/rotate-secret"), api.RotateSecretRequest{KeepOldFor: c.KeepOldFor}); err != nil {
		return err
	}
	_, err := fmt.Fprintln(cl.stderr(), "intake: store the new signing_secret now; it will not be shown again.")
	return err
}
