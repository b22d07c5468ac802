package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/intakehq/intake/api"
)

// EventsRetryCmd makes an event's waiting routes due now.
type EventsRetryCmd struct {
	outputFlags
	ID     string `arg:"" help:"The event to retry now."`
	DryRun bool   `name:"dry-run" help:"Change nothing; print what would be made due."`
}

// Run retries the event.
func (c *EventsRetryCmd) Run(cl *Client) error {
	return cl.retry(c.outputFlags, idPath("/api/v1/events", c.ID, "/retry"), c.DryRun)
}

// ConsumersRetryCmd makes every event waiting for a consumer due now.
type ConsumersRetryCmd struct {
	outputFlags
	ID     string `arg:"" help:"Consumer id."`
	DryRun bool   `name:"dry-run" help:"Change nothing; print the count and the first events that would be made due."`
}

// Run retries the consumer's waiting events.
func (c *ConsumersRetryCmd) Run(cl *Client) error {
	return cl.retry(c.outputFlags, idPath("/api/v1/consumers", c.ID, "/retry"), c.DryRun)
}

// IssuesRetryCmd makes an issue's waiting events due now.
type IssuesRetryCmd struct {
	outputFlags
	ID     string `arg:"" help:"Issue id."`
	DryRun bool   `name:"dry-run" help:"Change nothing; print the count and the first events that would be made due."`
}

// Run retries the issue's waiting events.
func (c *IssuesRetryCmd) Run(cl *Client) error {
	return cl.retry(c.outputFlags, idPath("/api/v1/issues", c.ID, "/retry"), c.DryRun)
}

// retry posts a retry now and prints how many events it made due and,
// for a dry run, the first of them.
func (cl *Client) retry(f outputFlags, path string, dryRun bool) error {
	raw, err := cl.call(http.MethodPost, path, nil, api.RetryRequest{DryRun: dryRun})
	if err != nil {
		return err
	}
	if f.JSON {
		return cl.printJSON(raw)
	}
	var r api.Retried
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("the server's answer is not a retry's: %w", err)
	}
	if !dryRun {
		_, err := fmt.Fprintf(cl.stdout(), "%s made due now\n", events(r.Count))
		return err
	}
	fmt.Fprintf(cl.stdout(), "dry run: %s would be made due now\n", events(r.Count))
	if len(r.Items) == 0 {
		return nil
	}
	rows := make([][]string, 0, len(r.Items))
	for _, e := range r.Items {
		rows = append(rows, []string{e.ID, e.Type, e.State, strconv.Itoa(e.Attempt), e.ReceivedAt.Format("2006-01-02 15:04:05")})
	}
	if r.Count > len(r.Items) {
		defer fmt.Fprintf(cl.stdout(), "… and %d more\n", r.Count-len(r.Items))
	}
	return cl.printTable([]string{"ID", "TYPE", "STATE", "ATTEMPT", "RECEIVED"}, rows)
}

// events writes n events.
func events(n int) string {
	if n == 1 {
		return "1 event"
	}
	return strconv.Itoa(n) + " events"
}
