package api

import (
	"encoding/json"
	"net/http"

	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/rules"
)

// RuleTestRequest is a dry run of a rule (DESIGN §8): against a stored
// event, a stored message (interpret), or an event given inline.
type RuleTestRequest struct {
	Kind      rules.Kind      `json:"kind"`
	Source    string          `json:"source"`
	EventID   string          `json:"event_id,omitempty"`
	MessageID string          `json:"message_id,omitempty"`
	Event     json.RawMessage `json:"event,omitempty"`
}

// RuleTestResult is what a dry run did: the result (a filter's bool, a
// transform's {skip, body, headers}, an interpret script's events), the
// output sent, the error if the rule failed on the input, and how long it
// took.
type RuleTestResult struct {
	Result     any     `json:"result"`
	Output     string  `json:"output,omitempty"`
	Error      string  `json:"error,omitempty"`
	DurationMS float64 `json:"duration_ms"`
}

// testRule runs a rule once and writes nothing.
func (s *Server) testRule(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	var req RuleTestRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	res, err := s.ctl.TestRule(r.Context(), who, control.RuleTest{Kind: req.Kind, Source: req.Source, EventID: req.EventID,
		MessageID: req.MessageID, Event: req.Event})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, RuleTestResult{Result: res.Result, Output: res.Output, Error: res.Error,
		DurationMS: float64(res.Duration.Microseconds()) / 1000})
	return nil
}
