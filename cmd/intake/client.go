package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/intakehq/intake/api"
)

// Client is the command-line client of the admin API: the flags every client
// command shares, and the command groups.
type Client struct {
	// Server is --server, never --url: --url is what a command sets (a
	// consumer's address), so the two cannot be mistaken for each other.
	Server string `name:"server" env:"INTAKE_URL" default:"http://localhost:8080" help:"Base URL of the intake server."`
	Token  string `name:"token" env:"INTAKE_TOKEN" help:"Staff token or an org's API key."`

	Orgs          OrgsCmd          `cmd:"" help:"Manage orgs (tenants)."`
	Connections   ConnectionsCmd   `cmd:"" help:"Manage connections to provider accounts."`
	Endpoints     EndpointsCmd     `cmd:"" help:"Manage ingress endpoints."`
	Messages      MessagesCmd      `cmd:"" help:"Inspect received messages."`
	Events        EventsCmd        `cmd:"" help:"Inspect interpreted events."`
	EventTypes    EventTypesCmd    `cmd:"" name:"event-types" help:"Read the catalog of event types received: counts, inferred JSON Schemas and their drift."`
	Consumers     ConsumersCmd     `cmd:"" help:"Manage the apps that receive events."`
	Issues        IssuesCmd        `cmd:"" help:"Read and act on the issues: failures that share one cause, by consumer or connection."`
	Rules         RulesCmd         `cmd:"" help:"Try a filter or transformation against a stored event before saving it."`
	Links         LinksCmd         `cmd:"" help:"Link provider objects to the app records they belong to."`
	Replay        ReplayCmd        `cmd:"" help:"Replay a message, or an endpoint's window of at most 7 days."`
	Jobs          JobsCmd          `cmd:"" help:"Follow window replays and bulk jobs (a bulk replay or re-route past --bulk-max, confirmed)."`
	Listen        ListenCmd        `cmd:"" help:"Forward the org's events, as they are routed, to a local URL (signed like a consumer delivery)."`
	Send          SendCmd          `cmd:"" help:"Post a correctly signed sample webhook of a provider to an endpoint."`
	Keys          KeysCmd          `cmd:"" help:"Manage an org's API keys."`
	Notifications NotificationsCmd `cmd:"" help:"Set where an org's operational notifications (dead messages, tripped consumers, forged requests, the storage quota) go."`
	Audit         AuditCmd         `cmd:"" help:"Read the log of operator actions."`
	Apply         ApplyCmd         `cmd:"" help:"Make the server hold what a configuration file declares (matched by name; --dry-run to see the plan first)."`
	Export        ExportCmd        `cmd:"" help:"Write the current orgs, connections, endpoints and consumers as a configuration file, without secrets."`

	out    io.Writer    // stdout when nil
	errOut io.Writer    // stderr when nil
	http   *http.Client // a client with a timeout when nil
}

// listFlags are the output flags of every list command.
type listFlags struct {
	JSON bool `name:"json" help:"Print the answer as JSON instead of a table."`
}

func (cl *Client) stdout() io.Writer {
	if cl.out == nil {
		return os.Stdout
	}
	return cl.out
}

func (cl *Client) stderr() io.Writer {
	if cl.errOut == nil {
		return os.Stderr
	}
	return cl.errOut
}

// call sends one API request and returns the answer's body; an error answer
// becomes an error carrying the server's message.
func (cl *Client) call(method, path string, query url.Values, in any) ([]byte, error) {
	if cl.Token == "" {
		return nil, errors.New("no token: set --token or INTAKE_TOKEN to the staff token or an org's API key")
	}
	u := strings.TrimRight(cl.Server, "/") + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+cl.Token)
	hc := cl.http
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach %s: %w", cl.Server, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", cl.Server, err)
	}
	if resp.StatusCode >= 300 {
		var e api.ErrorBody
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			return nil, errors.New(e.Error.Message)
		}
		return nil, fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return raw, nil
}

// get fetches path and decodes the answer into v.
func (cl *Client) get(path string, query url.Values, v any) ([]byte, error) {
	raw, err := cl.call(http.MethodGet, path, query, nil)
	if err != nil {
		return nil, err
	}
	return raw, json.Unmarshal(raw, v)
}

// printJSON prints an answer as indented JSON, exactly as the server wrote it.
func (cl *Client) printJSON(raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(raw), "", "  "); err != nil {
		return fmt.Errorf("the server's answer is not JSON: %w", err)
	}
	buf.WriteByte('\n')
	_, err := buf.WriteTo(cl.stdout())
	return err
}

// printTable prints rows under a header, aligned.
func (cl *Client) printTable(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(cl.stdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// printList prints a list answer as a table, or as JSON with --json.
func printList[T any](cl *Client, f listFlags, path string, query url.Values, header []string, row func(T) []string) error {
	var list api.List[T]
	raw, err := cl.get(path, query, &list)
	if err != nil {
		return err
	}
	if f.JSON {
		return cl.printJSON(raw)
	}
	rows := make([][]string, len(list.Items))
	for i, it := range list.Items {
		rows[i] = row(it)
	}
	if err := cl.printTable(header, rows); err != nil {
		return err
	}
	if list.NextCursor != "" {
		_, err = fmt.Fprintf(cl.stdout(), "more: --cursor %s\n", list.NextCursor)
	}
	return err
}

// outputFlags are the output flags of every command that prints one
// answer of the server (show, create, update, …).
type outputFlags struct {
	JSON bool `name:"json" help:"Print the server's answer as JSON instead of key: value lines."`
}

// show fetches one resource and prints it.
func (cl *Client) show(f outputFlags, path string) error {
	raw, err := cl.call(http.MethodGet, path, nil, nil)
	if err != nil {
		return err
	}
	return cl.print(f, raw)
}

// send posts (or puts, patches) a request and prints the answer.
func (cl *Client) send(f outputFlags, method, path string, in any) error {
	raw, err := cl.call(method, path, nil, in)
	if err != nil {
		return err
	}
	return cl.print(f, raw)
}

// print prints one answer as key: value lines, or as JSON with --json.
func (cl *Client) print(f outputFlags, raw []byte) error {
	if f.JSON {
		return cl.printJSON(raw)
	}
	return printReadable(cl.stdout(), raw)
}

// idPath joins an id given on the command line into a path, escaped so a
// stray slash cannot reach another route.
func idPath(prefix, id string, suffix ...string) string {
	return prefix + "/" + url.PathEscape(id) + strings.Join(suffix, "")
}

func timeCell(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func cell(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
