package main

import (
	"encoding/json"
	"fmt"

	"github.com/intakehq/intake/api"
)

// printPreview prints a bulk action's dry run: how many rows it would
// take, then the first of them.
func printPreview[T any](cl *Client, raw []byte, verb, noun string, header []string, row func(T) []string) error {
	var pv api.Bulk[T]
	if err := json.Unmarshal(raw, &pv); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(cl.stdout(), "dry run: would %s %d %s; nothing was changed\n", verb, pv.Count, noun); err != nil {
		return err
	}
	if len(pv.Items) == 0 {
		return nil
	}
	if len(pv.Items) < pv.Count {
		fmt.Fprintf(cl.stdout(), "the first %d:\n", len(pv.Items))
	}
	rows := make([][]string, len(pv.Items))
	for i, it := range pv.Items {
		rows[i] = row(it)
	}
	return cl.printTable(header, rows)
}

// previewEvents prints the dry run of an action on events.
func previewEvents(verb string) func(cl *Client, raw []byte) error {
	return func(cl *Client, raw []byte) error {
		return printPreview(cl, raw, verb, "events", eventColumns, eventRow)
	}
}

// previewMessages prints the dry run of an action on messages, their
// connections and endpoints by name.
func previewMessages(verb string) func(cl *Client, raw []byte) error {
	return func(cl *Client, raw []byte) error {
		n, err := endpointNames(cl)
		if err != nil {
			return err
		}
		return printPreview(cl, raw, verb, "messages", messageColumns, n.messageRow)
	}
}
