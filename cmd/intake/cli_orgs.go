package main

import (
	"net/http"

	"github.com/intakehq/intake/api"
)

// OrgsCmd manages tenants (staff token).
type OrgsCmd struct {
	Create OrgsCreateCmd `cmd:"" help:"Create an org and print its API key (shown only once)."`
	List   OrgsListCmd   `cmd:"" help:"List orgs."`
}

// OrgsCreateCmd creates an org.
type OrgsCreateCmd struct {
	Name string `arg:"" help:"Name of the org."`
}

// Run creates the org.
func (c *OrgsCreateCmd) Run(cl *Client) error {
	return cl.send(http.MethodPost, "/api/v1/orgs", api.CreateOrgRequest{Name: c.Name})
}

// OrgsListCmd lists orgs.
type OrgsListCmd struct {
	listFlags
}

// Run lists the orgs.
func (c *OrgsListCmd) Run(cl *Client) error {
	return printList(cl, c.listFlags, "/api/v1/orgs", nil,
		[]string{"ID", "NAME", "CREATED"},
		func(o api.Org) []string { return []string{o.ID, o.Name, timeCell(o.CreatedAt)} })
}
