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
	p, err := followJob(cl, job.ReplayID, c.Poll)
	if err != nil {
		return err
	}
	fmt.Fprintf(cl.stdout(), "replayed %d messages (replay %s)\n", p.Done, job.ReplayID)
	return nil
}

// followJob draws a job's progress until it ends, and returns it as it
// ended; a job that failed is an error.
func followJob(cl *Client, id string, poll time.Duration) (api.Replay, error) {
	for {
		var p api.Replay
		if _, err := cl.get(idPath("/api/v1/replays", id), nil, &p); err != nil {
			return p, err
		}
		fmt.Fprintf(cl.stderr(), "\r%s", progressBar(p.Done, p.Total, 30))
		if p.Finished {
			fmt.Fprintln(cl.stderr())
			if p.Error != "" {
				return p, fmt.Errorf("%s %s stopped after %d of %d: %s", jobName(p.Kind), id, p.Done, p.Total, p.Error)
			}
			return p, nil
		}
		time.Sleep(poll)
	}
}

// jobName names a job's kind for people.
func jobName(kind string) string {
	switch kind {
	case string(intake.JobReplay):
		return "bulk replay"
	case string(intake.JobReroute):
		return "bulk re-route"
	}
	return "replay"
}

// JobsCmd follows window replays and bulk jobs.
type JobsCmd struct {
	Show JobsShowCmd `cmd:"" help:"Show a window replay's or bulk job's progress; --wait follows it to its end."`
}

// JobsShowCmd shows one job.
type JobsShowCmd struct {
	outputFlags
	ID   string        `arg:"" help:"The job (replay_id, or the id a bulk action past --bulk-max answered)."`
	Wait bool          `name:"wait" help:"Draw the job's progress until it ends."`
	Poll time.Duration `name:"poll" default:"500ms" hidden:""`
}

// Run shows the job, or follows it.
func (c *JobsShowCmd) Run(cl *Client) error {
	if !c.Wait {
		return cl.send(c.outputFlags, http.MethodGet, idPath("/api/v1/replays", c.ID), nil)
	}
	p, err := followJob(cl, c.ID, c.Poll)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(cl.stdout(), "%s %s done: %d of %d\n", jobName(p.Kind), c.ID, p.Done, p.Total)
	return err
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
	bulkFlags
}

// Run re-routes.
func (c *EventsRerouteCmd) Run(cl *Client) error {
	if c.ID != "" {
		if c.DryRun {
			return errors.New("--dry-run previews a re-route by filter; give no event id")
		}
		return cl.send(c.outputFlags, http.MethodPost, idPath("/api/v1/events", c.ID, "/reroute"), nil)
	}
	req := api.RerouteRequest{Type: c.Type, State: intake.EventState(c.State), DryRun: c.DryRun, Confirm: c.Confirm}
	if c.Since > 0 {
		req.Since = time.Now().UTC().Add(-c.Since)
	}
	raw, err := cl.call(http.MethodPost, "/api/v1/events/reroute", nil, req)
	switch {
	case err != nil:
		return err
	case c.JSON:
		return cl.printJSON(raw)
	case c.DryRun:
		return previewEvents("re-route")(cl, raw)
	}
	return c.printBulk(cl, raw, "re-routed %d events\n")
}

// bulkFlags are the flags of a bulk action past the bulk maximum.
type bulkFlags struct {
	Confirm bool          `name:"confirm" help:"Let a search select more rows than the server's --bulk-max: the action then runs as a paced job, printed with its id."`
	Wait    bool          `name:"wait" help:"With --confirm: draw the job's progress until it ends."`
	Poll    time.Duration `name:"poll" default:"500ms" hidden:""`
}

// printBulk prints a bulk action's answer: how many rows it took, or the
// job it became (followed to its end with --wait).
func (f bulkFlags) printBulk(cl *Client, raw []byte, done string) error {
	var out struct {
		Count int    `json:"count"`
		ID    string `json:"id"`
		Kind  string `json:"kind"`
		Total int    `json:"total"`
		State string `json:"state"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return err
	}
	if out.ID == "" {
		_, err := fmt.Fprintf(cl.stdout(), done, out.Count)
		return err
	}
	if !f.Wait {
		_, err := fmt.Fprintf(cl.stdout(), "%s %s of %d rows: %s (intake jobs show %s --wait to follow it)\n",
			jobName(out.Kind), out.ID, out.Total, out.State, out.ID)
		return err
	}
	p, err := followJob(cl, out.ID, f.Poll)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(cl.stdout(), "%s %s done: %d of %d\n", jobName(p.Kind), out.ID, p.Done, p.Total)
	return err
}
