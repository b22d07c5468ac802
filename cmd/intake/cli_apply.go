package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/intakehq/intake/control"
)

// ApplyCmd makes the server hold what a configuration file declares.
type ApplyCmd struct {
	File   string `name:"file" short:"f" required:"" type:"existingfile" help:"The configuration file (YAML, see docs/intake.schema.json)."`
	DryRun bool   `name:"dry-run" help:"Show the plan and change nothing."`
	Prune  bool   `name:"prune" help:"Delete the connections, endpoints and consumers of the file's orgs that it does not name."`
	JSON   bool   `name:"json" help:"Print the plan as JSON."`
}

// Run reads the file, resolves its secrets here, and sends it.
func (c *ApplyCmd) Run(cl *Client) error {
	doc, err := readDocument(c.File)
	if err != nil {
		return err
	}
	q := url.Values{"dry_run": {strconv.FormatBool(c.DryRun)}, "prune": {strconv.FormatBool(c.Prune)}}
	raw, err := cl.call(http.MethodPost, "/api/v1/apply", q, doc)
	if err != nil {
		return err
	}
	if c.JSON {
		return cl.printJSON(raw)
	}
	var plan control.Plan
	if err := json.Unmarshal(raw, &plan); err != nil {
		return fmt.Errorf("the server's plan is not JSON: %w", err)
	}
	return printPlan(cl.stdout(), plan, filepath.Base(c.File))
}

// readDocument parses a configuration file, refusing unknown fields, and
// resolves the ${env:…} and ${file:…} of its secrets.
func readDocument(path string) (control.Document, error) {
	var doc control.Document
	b, err := os.ReadFile(path)
	if err != nil {
		return doc, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return doc, fmt.Errorf("%s is empty", path)
		}
		return doc, fmt.Errorf("%s: %w", path, err)
	}
	dir := filepath.Dir(path)
	for i := range doc.Orgs {
		o := &doc.Orgs[i]
		for j := range o.Connections {
			cn := &o.Connections[j]
			for k, s := range cn.Secrets {
				v, err := resolveSecret(s, dir)
				if err != nil {
					return doc, fmt.Errorf("%s: connection %s/%s secrets[%d]: %w", path, o.Name, cn.Name, k, err)
				}
				cn.Secrets[k] = v
			}
		}
		if n := o.Notifications; n != nil && n.SlackWebhookURL != "" {
			v, err := resolveSecret(n.SlackWebhookURL, dir)
			if err != nil {
				return doc, fmt.Errorf("%s: notifications of org %s: slack_webhook_url: %w", path, o.Name, err)
			}
			n.SlackWebhookURL = v
		}
	}
	return doc, nil
}

var placeholder = regexp.MustCompile(`^\$\{(env|file):([^}]+)\}$`)

// resolveSecret turns ${env:NAME} into the variable's value and
// ${file:PATH} (relative to the configuration file) into the file's
// content without its final newline; anything else is the secret itself.
// Errors name the variable or the file, never a value.
func resolveSecret(s, dir string) (string, error) {
	m := placeholder.FindStringSubmatch(s)
	if m == nil {
		if strings.HasPrefix(s, "${") {
			return "", errors.New("a placeholder is ${env:NAME} or ${file:PATH}")
		}
		return s, nil
	}
	if m[1] == "env" {
		v, ok := os.LookupEnv(m[2])
		if !ok || v == "" {
			return "", fmt.Errorf("environment variable %s is not set (or empty)", m[2])
		}
		return v, nil
	}
	p := m[2]
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("cannot read secret file %s: %w", p, errors.Unwrap(err))
	}
	v := strings.TrimRight(string(b), "\r\n")
	if v == "" {
		return "", fmt.Errorf("secret file %s is empty", p)
	}
	return v, nil
}

// printPlan shows a plan one change a line, then what the server minted.
func printPlan(w io.Writer, plan control.Plan, file string) error {
	if plan.Unchanged {
		_, err := fmt.Fprintf(w, "No changes: the server already holds what %s declares (%d unchanged).\n", file, len(plan.Changes))
		return err
	}
	marks := map[string]string{control.ActionCreate: "+", control.ActionUpdate: "~", control.ActionDelete: "-", control.ActionUnchanged: "="}
	counts := map[string]int{}
	var minted []string
	for _, c := range plan.Changes {
		counts[c.Action]++
		line := fmt.Sprintf("%s %-9s %-10s %s", marks[c.Action], c.Action, c.Kind, planPath(c))
		if len(c.Fields) > 0 {
			line += ": " + strings.Join(c.Fields, ", ")
		}
		fmt.Fprintln(w, line)
		switch {
		case c.APIKey != "":
			minted = append(minted, fmt.Sprintf("org %s API key: %s", planPath(c), c.APIKey))
		case c.URL != "":
			minted = append(minted, fmt.Sprintf("endpoint %s URL (give it to the provider): %s", planPath(c), c.URL))
		case c.SigningSecret != "" && c.Kind == "notifications":
			minted = append(minted, fmt.Sprintf("notifications of org %s signing secret (receivers verify notices with it): %s", c.Org, c.SigningSecret))
		case c.SigningSecret != "":
			minted = append(minted, fmt.Sprintf("consumer %s signing secret: %s", planPath(c), c.SigningSecret))
		}
	}
	verb := "made"
	if plan.DryRun {
		verb = "planned (dry run: nothing written)"
	}
	fmt.Fprintf(w, "%d to create, %d to update, %d to delete, %d unchanged: %s.\n",
		counts[control.ActionCreate], counts[control.ActionUpdate], counts[control.ActionDelete], counts[control.ActionUnchanged], verb)
	if len(minted) > 0 {
		fmt.Fprintln(w, "\nShown once, keep them now:")
		for _, m := range minted {
			fmt.Fprintln(w, "  "+m)
		}
	}
	return nil
}

func planPath(c control.Change) string {
	switch {
	case c.Kind == "org":
		return c.Name
	case c.Connection != "":
		return c.Org + "/" + c.Connection + "/" + c.Name
	}
	return c.Org + "/" + c.Name
}

// ExportCmd writes the server's current state as a configuration file.
type ExportCmd struct {
	Org string `name:"org" help:"Org id (staff: default every org; an org key: its own)."`
}

// Run prints the state as YAML, its secrets as placeholders.
func (c *ExportCmd) Run(cl *Client) error {
	var q url.Values
	if c.Org != "" {
		q = url.Values{"org_id": {c.Org}}
	}
	var doc control.Document
	if _, err := cl.get("/api/v1/export", q, &doc); err != nil {
		return err
	}
	return writeDocument(cl.stdout(), doc)
}

// secretsComment heads each exported secret list.
const secretsComment = "Secrets are never exported: set these variables (or write ${file:PATH}) before intake apply."

// writeDocument writes doc as YAML, with a comment over each secret list.
func writeDocument(w io.Writer, doc control.Document) error {
	var root yaml.Node
	if err := root.Encode(doc); err != nil {
		return err
	}
	commentSecrets(&root)
	root.HeadComment = "intake configuration (intake apply -f FILE); schema: docs/intake.schema.json"
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return err
	}
	return enc.Close()
}

func commentSecrets(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "secrets" && n.Content[i+1].Kind == yaml.SequenceNode {
				n.Content[i].HeadComment = secretsComment
			}
		}
	}
	for _, c := range n.Content {
		commentSecrets(c)
	}
}
