package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/intakehq/intake/api"
)

// ConnectionsCmd manages an org's links to provider accounts.
type ConnectionsCmd struct {
	Create ConnectionsCreateCmd `cmd:"" help:"Create a connection to a provider account."`
	List   ConnectionsListCmd   `cmd:"" help:"List connections."`
	Show   ConnectionsShowCmd   `cmd:"" help:"Show one connection."`
	Delete ConnectionsDeleteCmd `cmd:"" help:"Delete a connection and its endpoints (their history stays)."`
	Adopt  ConnectionsAdoptCmd  `cmd:"" name:"adopt-secret" help:"Add the signing secret a provider handed over in a recorded handshake (Asana)."`
}

// ConnectionsAdoptCmd adds a handshake's secret to a connection.
type ConnectionsAdoptCmd struct {
	outputFlags
	ID      string `arg:"" help:"Connection id."`
	Message string `name:"message" required:"" help:"Id of the recorded handshake message."`
}

// Run adopts the secret; the secret itself is never printed.
func (c *ConnectionsAdoptCmd) Run(cl *Client) error {
	return cl.send(c.outputFlags, http.MethodPost, idPath("/api/v1/connections", c.ID, "/adopt-handshake-secret"), api.AdoptSecretRequest{MessageID: c.Message})
}

// ConnectionsCreateCmd creates a connection.
type ConnectionsCreateCmd struct {
	outputFlags
	Org      string   `name:"org" help:"Org id (required with the staff token)."`
	Provider string   `name:"provider" required:"" help:"Provider code (stripe, github, …, or none)."`
	Name     string   `name:"name" required:"" help:"Name of the connection."`
	Secret   []string `name:"secret" sep:"none" help:"Signing secret; repeat for several active at once."`
	Config   string   `name:"config" help:"Provider settings as a JSON object."`
}

// Run creates the connection.
func (c *ConnectionsCreateCmd) Run(cl *Client) error {
	req := api.CreateConnectionRequest{OrgID: c.Org, Provider: c.Provider, Name: c.Name, Secrets: c.Secret}
	if c.Config != "" {
		if !json.Valid([]byte(c.Config)) {
			return errors.New("--config must be a JSON object")
		}
		req.Config = json.RawMessage(c.Config)
	}
	return cl.send(c.outputFlags, http.MethodPost, "/api/v1/connections", req)
}

// ConnectionsListCmd lists connections.
type ConnectionsListCmd struct {
	listFlags
}

// Run lists the connections.
func (c *ConnectionsListCmd) Run(cl *Client) error {
	return printList(cl, c.listFlags, "/api/v1/connections", nil,
		[]string{"ID", "ORG", "PROVIDER", "NAME", "SECRETS", "CREATED"},
		func(x api.Connection) []string {
			secrets := "?"
			if x.SecretCount != nil {
				secrets = strconv.Itoa(*x.SecretCount)
			}
			return []string{x.ID, x.OrgID, x.Provider, x.Name, secrets, timeCell(x.CreatedAt)}
		})
}

// ConnectionsShowCmd shows one connection.
type ConnectionsShowCmd struct {
	outputFlags
	ID string `arg:"" help:"Connection id."`
}

// Run shows the connection.
func (c *ConnectionsShowCmd) Run(cl *Client) error {
	return cl.show(c.outputFlags, idPath("/api/v1/connections", c.ID))
}
