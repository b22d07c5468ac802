package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

// answerLines is how many lines of an answer's body events show prints.
const answerLines = 8

// printEventDetail prints an event as key: value lines, then its routes,
// its deliveries, and what the consumer answered to each call.
func printEventDetail(w io.Writer, d api.EventDetail) error {
	raw, err := json.Marshal(d.Event)
	if err != nil {
		return err
	}
	if err := printReadable(w, raw); err != nil {
		return err
	}
	if len(d.Routes) > 0 {
		rows := make([][]string, 0, len(d.Routes))
		for _, r := range d.Routes {
			rows = append(rows, []string{consumerCell(r.ConsumerName, r.ConsumerID), r.State, intake.AttemptOf(r.Attempt, r.MaxAttempts), cell(r.LastError)})
		}
		if err := indentedTable(w, "routes", []string{"CONSUMER", "STATE", "ATTEMPT", "LAST ERROR"}, rows); err != nil {
			return err
		}
	}
	if len(d.Deliveries) == 0 {
		_, err := fmt.Fprintln(w, "\ndeliveries: none")
		return err
	}
	rows := make([][]string, 0, len(d.Deliveries))
	for _, x := range d.Deliveries {
		rows = append(rows, []string{timeCell(x.At), consumerCell(x.ConsumerName, x.ConsumerID), intake.AttemptOf(x.Attempt, x.MaxAttempts),
			x.Outcome, statusCell(x.StatusCode), strconv.FormatFloat(x.LatencyMS, 'f', -1, 64) + "ms", cell(x.Error)})
	}
	if err := indentedTable(w, "deliveries", []string{"AT", "CONSUMER", "ATTEMPT", "OUTCOME", "STATUS", "LATENCY", "ERROR"}, rows); err != nil {
		return err
	}
	header := false
	for _, x := range d.Deliveries {
		r := x.Response
		if r == nil {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\nanswers:")
			header = true
		}
		fmt.Fprintf(w, "  %s, attempt %s, %s: %d\n", consumerCell(x.ConsumerName, x.ConsumerID), intake.AttemptOf(x.Attempt, x.MaxAttempts),
			timeCell(x.At), r.Status)
		for _, name := range []string{"content-type", "retry-after"} {
			if v, ok := r.Headers[name]; ok {
				fmt.Fprintf(w, "    %s: %s\n", name, v)
			}
		}
		printAnswerBody(w, r)
	}
	return nil
}

// printAnswerBody prints the first lines of an answer's body, each
// clipped, saying when there was more.
func printAnswerBody(w io.Writer, r *api.DeliveryResponse) {
	if r.Body == "" {
		fmt.Fprintln(w, "    body: empty")
		return
	}
	more := r.BodyTruncated
	if r.BodyEncoding == "base64" {
		fmt.Fprintln(w, "    body (not text; base64):")
		fmt.Fprintf(w, "      %s\n", clip(r.Body, 120))
	} else {
		fmt.Fprintln(w, "    body:")
		n := 0
		for line := range strings.Lines(r.Body) {
			if n == answerLines {
				more = true
				break
			}
			fmt.Fprintf(w, "      %s\n", clip(strings.TrimRight(line, "\r\n"), 120))
			n++
		}
	}
	if more {
		fmt.Fprintln(w, "      …")
	}
}

// indentedTable prints a titled table under key: value lines.
func indentedTable(w io.Writer, title string, header []string, rows [][]string) error {
	fmt.Fprintf(w, "\n%s:\n", title)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  "+strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, "  "+strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func consumerCell(name, id string) string {
	if name == "" {
		return id + " (deleted)"
	}
	return name
}

func statusCell(code int) string {
	if code == 0 {
		return "-"
	}
	return strconv.Itoa(code)
}
