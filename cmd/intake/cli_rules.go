package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/rules"
)

// RulesCmd tries filters and transformations before they are saved.
type RulesCmd struct {
	Test RulesTestCmd `cmd:"" help:"Run a rule once against a stored event or message and print what it did; nothing is written."`
}

// RulesTestCmd is a dry run: a consumer's saved rules, or a rule from a
// file, against a stored event (or, for an interpret script, a message).
type RulesTestCmd struct {
	Consumer string `name:"consumer" xor:"what" help:"Try this consumer's saved filter and transform."`
	Source   string `name:"source" xor:"what" type:"existingfile" help:"Try the rule in this file (.cel: a filter; .js: a transform or an interpret script)."`
	Kind     string `name:"kind" enum:",filter,key,transform,interpret" default:"" help:"What the --source file is, when its name does not say: filter, key, transform or interpret."`
	Event    string `name:"event" help:"Stored event id to try the rule against."`
	Message  string `name:"message" help:"Stored message id, for an interpret script."`
}

// Run performs the dry run and prints each result.
func (c *RulesTestCmd) Run(cl *Client) error {
	if c.Consumer == "" && c.Source == "" {
		return errors.New("give --consumer ID or --source FILE")
	}
	if c.Event == "" && c.Message == "" {
		return errors.New("give --event ID (or --message ID for an interpret script)")
	}
	var tests []api.RuleTestRequest
	if c.Consumer != "" {
		var cons api.Consumer
		if _, err := cl.get(idPath("/api/v1/consumers", c.Consumer), nil, &cons); err != nil {
			return err
		}
		if cons.Filter == "" && cons.Transform == "" {
			return fmt.Errorf("consumer %s has no filter and no transform", c.Consumer)
		}
		if cons.Filter != "" {
			tests = append(tests, api.RuleTestRequest{Kind: rules.KindFilter, Source: cons.Filter, EventID: c.Event})
		}
		if cons.Transform != "" {
			tests = append(tests, api.RuleTestRequest{Kind: rules.KindTransform, Source: cons.Transform, EventID: c.Event})
		}
	} else {
		src, err := os.ReadFile(c.Source)
		if err != nil {
			return err
		}
		kind := rules.Kind(c.Kind)
		if kind == "" {
			kind = kindOf(c.Source, string(src))
		}
		tests = append(tests, api.RuleTestRequest{Kind: kind, Source: string(src), EventID: c.Event, MessageID: c.Message})
	}
	var failed []string
	for _, t := range tests {
		fmt.Fprintf(cl.stdout(), "%s:\n", t.Kind)
		raw, err := cl.call(http.MethodPost, "/api/v1/rules/test", nil, t)
		if err != nil {
			return err
		}
		if err := cl.printJSON(raw); err != nil {
			return err
		}
		var res api.RuleTestResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("the server's answer is not a rule test's result: %w", err)
		}
		if res.Error != "" {
			failed = append(failed, fmt.Sprintf("the %s failed: %s", t.Kind, res.Error))
		}
	}
	if len(failed) > 0 {
		// A script that fails on the event is what a dry run is for
		// finding: the command says so in its exit status too.
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

// kindOf tells a rule file's kind from its name and source.
func kindOf(name, src string) rules.Kind {
	switch {
	case strings.HasSuffix(name, ".cel"):
		return rules.KindFilter
	case strings.Contains(src, "function interpret"):
		return rules.KindInterpret
	}
	return rules.KindTransform
}

// ruleFlags set a consumer's rules from the command line or from files.
type ruleFlags struct {
	Filter        string `name:"filter" help:"CEL filter: the consumer receives only the events it accepts (e.g. 'event.data.object.amount >= 100000')."`
	FilterFile    string `name:"filter-file" type:"existingfile" help:"Read the CEL filter from this file."`
	TransformFile string `name:"transform-file" type:"existingfile" help:"Read the JavaScript transform (function transform(event, context)) from this file."`
}

// rules returns the filter and transform the flags give; set reports
// which were given.
func (f ruleFlags) rules() (filter, transform string, setFilter, setTransform bool, err error) {
	filter, setFilter = f.Filter, f.Filter != ""
	if f.FilterFile != "" {
		if setFilter {
			return "", "", false, false, errors.New("give --filter or --filter-file, not both")
		}
		b, err := os.ReadFile(f.FilterFile)
		if err != nil {
			return "", "", false, false, err
		}
		filter, setFilter = strings.TrimSpace(string(b)), true
	}
	if f.TransformFile != "" {
		b, err := os.ReadFile(f.TransformFile)
		if err != nil {
			return "", "", false, false, err
		}
		transform, setTransform = string(b), true
	}
	return filter, transform, setFilter, setTransform, nil
}

// ConsumersUpdateCmd changes a consumer's name, address, event types,
// rules and delivery controls; what it is not given stays as it is.
type ConsumersUpdateCmd struct {
	outputFlags
	ID        string   `arg:"" help:"Consumer id."`
	Name      *string  `name:"name" help:"New name of the consumer."`
	URL       *string  `name:"url" help:"Where events are posted from now on (http or https)."`
	EventType []string `name:"event-type" sep:"none" help:"The event types it receives from now on, replacing the ones it has; repeat for several."`
	ruleFlags
	ClearFilter    bool `name:"clear-filter" help:"Remove the consumer's filter."`
	ClearTransform bool `name:"clear-transform" help:"Remove the consumer's transform."`
	controlFlags
}

// controlFlags set a consumer's delivery controls, on creation or in an
// update; the server checks them.
type controlFlags struct {
	Rate             *float64 `name:"rate" help:"Most calls per second, across all processes (0: no limit)."`
	MaxInFlight      string   `name:"max-in-flight" help:"Most calls in flight, across all processes (1: one at a time; none or 0: no limit)."`
	Ordering         *string  `name:"ordering" help:"Deliver in order per key: subject (per provider object), a CEL expression giving the key, or '' for none."`
	RetryAttempts    *int     `name:"retry-attempts" help:"Attempts before an event is dead for this consumer (0: the server's)."`
	RetryBase        *string  `name:"retry-base" help:"First wait before a retry, growing fourfold (e.g. 30s; 0s: the server's)."`
	BreakerFailures  *int     `name:"breaker-failures" help:"Failed calls in a row that open the circuit breaker (0: the default, 10)."`
	AutoDisableAfter *string  `name:"auto-disable-after" help:"Continuous failure that disables the consumer (e.g. 72h; 0s: the default)."`
}

// controls is the request's delivery controls the flags give; absent
// flags are absent controls.
func (f controlFlags) controls() (api.ConsumerControls, error) {
	c := api.ConsumerControls{RatePerSec: f.Rate, Ordering: f.Ordering, BreakerFailures: f.BreakerFailures,
		AutoDisableAfter: f.AutoDisableAfter}
	switch f.MaxInFlight {
	case "":
	case "none":
		c.MaxInFlight = new(int)
	default:
		n, err := strconv.Atoi(f.MaxInFlight)
		if err != nil {
			return c, errors.New("--max-in-flight takes a number or none")
		}
		c.MaxInFlight = &n
	}
	if f.RetryAttempts != nil || f.RetryBase != nil {
		c.Retry = &api.RetryPolicy{Attempts: f.RetryAttempts, Base: f.RetryBase}
	}
	return c, nil
}

// Run saves the change.
func (c *ConsumersUpdateCmd) Run(cl *Client) error {
	filter, transform, setFilter, setTransform, err := c.rules()
	if err != nil {
		return err
	}
	req := api.UpdateConsumerRequest{Name: c.Name, URL: c.URL}
	if len(c.EventType) > 0 {
		req.EventTypes = &c.EventType
	}
	if setFilter || c.ClearFilter {
		req.Filter = &filter
	}
	if setTransform || c.ClearTransform {
		req.Transform = &transform
	}
	if req.ConsumerControls, err = c.controls(); err != nil {
		return err
	}
	if req == (api.UpdateConsumerRequest{}) {
		return errors.New("nothing to change: give --name, --url, --event-type, --filter, --filter-file, --transform-file, --clear-filter, --clear-transform, " +
			"--rate, --max-in-flight, --ordering, --retry-attempts, --retry-base, --breaker-failures or --auto-disable-after")
	}
	return cl.send(c.outputFlags, http.MethodPatch, idPath("/api/v1/consumers", c.ID), req)
}
