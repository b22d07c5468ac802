package main

import (
	"net/http"

	"github.com/intakehq/intake/api"
)

// OrgsCmd manages tenants (staff token).
type OrgsCmd struct {
	Create OrgsCreateCmd `cmd:"" help:"Create an org and print its API key (shown only once)."`
	List   OrgsListCmd   `cmd:"" help:"List orgs."`
	Rename OrgsRenameCmd `cmd:"" help:"Rename an org; the name must be one no other org has."`
	Delete OrgsDeleteCmd `cmd:"" help:"Delete an org: its endpoints answer 404 at once and its keys stop; its history stays."`
}

// OrgsCreateCmd creates an org.
type OrgsCreateCmd struct {
	outputFlags
	Name string `arg:"" help:"Name of the org."`
}

// Run creates the org.
func (c *OrgsCreateCmd) Run(cl *Client) error {
	return cl.send(c.outputFlags, http.MethodPost, "/api/v1/orgs", api.CreateOrgRequest{Name: c.Name})
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

// OrgsRenameCmd renames an org.
type OrgsRenameCmd struct {
	outputFlags
	ID   string `arg:"" help:"The org's id."`
	Name string `arg:"" help:"Its new name."`
}

// Run renames it.
func (c *OrgsRenameCmd) Run(cl *Client) error {
	return cl.send(c.outputFlags, http.MethodPatch, idPath("/api/v1/orgs", c.ID), api.UpdateOrgRequest{Name: &c.Name})
}

// OrgsDeleteCmd deletes an org.
type OrgsDeleteCmd struct {
	ID string `arg:"" help:"The org's id."`
}

// Run deletes it.
func (c *OrgsDeleteCmd) Run(cl *Client) error {
	return deleteByID(cl, "/api/v1/orgs", "org", c.ID)
}
