package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

// ReplayCmd replays one message, or an endpoint's window with a progress bar.
type ReplayCmd struct {
	outputFlags
	Message  string        `name:"message" help:"Replay this message."`
	Endpoint string        `name:"endpoint" help:"Replay what this endpoint received in a window."`
	Since    time.Duration `name:"since" help:"Window start, this long ago (e.g. 24h)."`
	Until    time.Duration `name:"until" help:"Window end, this long ago (default: now)."`
	DryRun   bool          `name:"dry-run" help:"With --endpoint: print how many messages the window holds and the first of them, and replay nothing."`
	Poll     time.Duration `name:"poll" default:"500ms" hidden:""`
}

// Run replays and, for a window, follows the job to its end.
func (c *ReplayCmd) Run(cl *Client) error {
	switch {
	case c.Message != "" && c.Endpoint != "":
		return errors.New("give --message or --endpoint, not both")
	case c.Message != "" && c.DryRun:
		return errors.New("--dry-run previews a window replay (--endpoint); a message's replay is one message")
	case c.Message != "":
		return cl.send(c.outputFlags, http.MethodPost, idPath("/api/v1/messages", c.Message, "/replay"), nil)
	case c.Endpoint == "" || c.Since <= 0:
		return errors.New("give --message ID, or --endpoint ID with --since (e.g. --since 24h)")
	}
	now := time.Now().UTC()
	raw, err := cl.call(http.MethodPost, idPath("/api/v1/endpoints", c.Endpoint, "/replay"), nil,
		api.ReplayWindowRequest{Since: now.Add(-c.Since), Until: now.Add(-c.Until), DryRun: c.DryRun})
	if err != nil {
		return err
	}
	if c.DryRun {
		if c.JSON {
			return cl.printJSON(raw)
		}
		return previewMessages("replay")(cl, raw)
	}
	var job struct {
		Count    int    `json:"count"`
		ReplayID string `json:"replay_id"`
	}
	if err := json.Unmarshal(raw, &job); err != nil {
		return err
	}
	for {
		var p struct {
			Total, Done int
			Finished    bool
			Error       string
		}
		if _, err := cl.get(idPath("/api/v1/replays", job.ReplayID), nil, &p); err != nil {
			return err
		}
		fmt.Fprintf(cl.stderr(), "\r%s", progressBar(p.Done, p.Total, 30))
		if p.Finished {
			fmt.Fprintln(cl.stderr())
			if p.Error != "" {
				return fmt.Errorf("replay stopped after %d of %d: %s", p.Done, p.Total, p.Error)
			}
			fmt.Fprintf(cl.stdout(), "replayed %d messages (replay %s)\n", p.Done, job.ReplayID)
			return nil
		}
		time.Sleep(c.Poll)
	}
}

// progressBar draws "[#####.....]  5/10".
func progressBar(done, total, width int) string {
	filled := width
	if total > 0 {
		filled = done * width / total
	}
	return fmt.Sprintf("[%s%s] %d/%d", strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total)
}

// EventsRerouteCmd re-routes dead or no_consumer events.
type EventsRerouteCmd struct {
	outputFlags
	ID     string        `arg:"" optional:"" help:"The event to re-route; omit to re-route by filter."`
	State  string        `name:"state" help:"Only events in this state (dead or no_consumer; default both)."`
	Type   string        `name:"type" help:"Only events of this type."`
	Since  time.Duration `name:"since" help:"Only events created at most this long ago."`
	DryRun bool          `name:"dry-run" help:"Print how many events the filter would re-route and the first of them, and change nothing."`
}

// Run re-routes.
func (c *EventsRerouteCmd) Run(cl *Client) error {
	if c.ID != "" {
		if c.DryRun {
			return errors.New("--dry-run previews a re-route by filter; give no event id")
		}
		return cl.send(c.outputFlags, http.MethodPost, idPath("/api/v1/events", c.ID, "/reroute"), nil)
	}
	req := api.RerouteRequest{Type: c.Type, State: intake.EventState(c.State), DryRun: c.DryRun}
	if c.Since > 0 {
		req.Since = time.Now().UTC().Add(-c.Since)
	}
	if !c.DryRun || c.JSON {
		return cl.send(c.outputFlags, http.MethodPost, "/api/v1/events/reroute", req)
	}
	raw, err := cl.call(http.MethodPost, "/api/v1/events/reroute", nil, req)
	if err != nil {
		return err
	}
	return previewEvents("re-route")(cl, raw)
}
