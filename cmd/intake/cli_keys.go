package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/intakehq/intake/api"
)

// KeysCmd manages an org's API keys.
type KeysCmd struct {
	Create KeysCreateCmd `cmd:"" help:"Create another API key (shown only once)."`
	List   KeysListCmd   `cmd:"" help:"List API keys by prefix."`
	Revoke KeysRevokeCmd `cmd:"" help:"Revoke an API key; it stops working at once."`
}

// KeysCreateCmd creates a key.
type KeysCreateCmd struct {
	outputFlags
	Org  string `name:"org" help:"The org (staff token); an org key creates in its own org."`
	Role string `name:"role" help:"What the key may do: viewer (read), operator (also replay, re-route, pause, tests) or admin (everything in the org; the default)."`
	Name string `name:"name" help:"Who or what holds the key (at most 100 bytes), shown in lists."`
}

// Run creates the key and prints it.
func (c *KeysCreateCmd) Run(cl *Client) error {
	if err := cl.send(c.outputFlags, http.MethodPost, "/api/v1/keys", api.CreateKeyRequest{OrgID: c.Org, Role: c.Role, Name: c.Name}); err != nil {
		return err
	}
	fmt.Fprintln(cl.stderr(), "intake: store the key now; it will not be shown again")
	return nil
}

// KeysListCmd lists keys.
type KeysListCmd struct{ listFlags }

// Run lists the keys.
func (c *KeysListCmd) Run(cl *Client) error {
	return printList(cl, c.listFlags, "/api/v1/keys", nil,
		[]string{"ID", "NAME", "ORG", "PREFIX", "ROLE", "CREATED", "REVOKED"},
		func(k api.APIKey) []string {
			revoked := "-"
			if k.RevokedAt != nil {
				revoked = timeCell(*k.RevokedAt)
			}
			return []string{k.ID, cell(k.Name), k.OrgID, k.Prefix, k.Role, timeCell(k.CreatedAt), revoked}
		})
}

// KeysRevokeCmd revokes a key.
type KeysRevokeCmd struct {
	ID string `arg:"" help:"The key's id."`
}

// Run revokes the key.
func (c *KeysRevokeCmd) Run(cl *Client) error {
	if _, err := cl.call(http.MethodDelete, idPath("/api/v1/keys", c.ID), nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(cl.stdout(), "revoked %s\n", c.ID)
	return nil
}

// AuditCmd reads the audit log.
type AuditCmd struct {
	List AuditListCmd `cmd:"" help:"List operator actions, newest first."`
}

// AuditListCmd lists audit entries.
type AuditListCmd struct {
	Limit  int    `name:"limit" help:"Entries per page (default 50, at most 500)."`
	Cursor string `name:"cursor" help:"Continue after the page that printed this cursor."`
	listFlags
}

// Run lists the entries.
func (c *AuditListCmd) Run(cl *Client) error {
	q := url.Values{}
	if c.Limit > 0 {
		q.Set("limit", strconv.Itoa(c.Limit))
	}
	if c.Cursor != "" {
		q.Set("cursor", c.Cursor)
	}
	return printList(cl, c.listFlags, "/api/v1/audit", q,
		[]string{"AT", "ACTOR", "ACTION", "TARGET", "DETAIL"},
		func(a api.AuditEntry) []string {
			return []string{timeCell(a.At), a.Actor, a.Action, a.TargetType + " " + a.TargetID, a.Detail}
		})
}
