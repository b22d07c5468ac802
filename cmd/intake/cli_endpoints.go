package main

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/intakehq/intake/api"
)

// EndpointsCmd manages ingress endpoints.
type EndpointsCmd struct {
	Create  EndpointsCreateCmd  `cmd:"" help:"Create an endpoint and print its URL (shown only once)."`
	List    EndpointsListCmd    `cmd:"" help:"List endpoints."`
	Show    EndpointsShowCmd    `cmd:"" help:"Show one endpoint."`
	Enable  EndpointsEnableCmd  `cmd:"" help:"Accept webhooks at an endpoint again."`
	Disable EndpointsDisableCmd `cmd:"" help:"Refuse webhooks at an endpoint (404, nothing recorded)."`
	Rotate  EndpointsRotateCmd  `cmd:"" help:"Give an endpoint a new token and URL (shown once); the old URL keeps working for --overlap."`
	Delete  EndpointsDeleteCmd  `cmd:"" help:"Delete an endpoint (its history stays)."`
}

// EndpointsCreateCmd creates an endpoint; absent limits take the server's
// defaults.
type EndpointsCreateCmd struct {
	outputFlags
	Connection   string   `name:"connection" required:"" help:"Connection id."`
	Name         *string  `name:"name" help:"A name unique among the connection's endpoints (what intake apply matches)."`
	MaxBodyBytes *int64   `name:"max-body-bytes" help:"Largest body accepted (default 1 MiB; at most the server's --max-body-bytes)."`
	RatePerSec   *float64 `name:"rate-per-sec" help:"Requests per second allowed; 0 for no limit."`
	Burst        *int     `name:"burst" help:"Requests allowed at once above the rate."`
}

// Run creates the endpoint.
func (c *EndpointsCreateCmd) Run(cl *Client) error {
	return cl.send(c.outputFlags, http.MethodPost, "/api/v1/endpoints", api.CreateEndpointRequest{
		ConnectionID: c.Connection,
		Name:         c.Name,
		MaxBodyBytes: c.MaxBodyBytes,
		RatePerSec:   c.RatePerSec,
		Burst:        c.Burst,
	})
}

// EndpointsListCmd lists endpoints.
type EndpointsListCmd struct {
	listFlags
}

// Run lists the endpoints.
func (c *EndpointsListCmd) Run(cl *Client) error {
	return printList(cl, c.listFlags, "/api/v1/endpoints", nil,
		[]string{"ID", "NAME", "CONNECTION", "PROVIDER", "ENABLED", "MAX BODY", "RATE/S", "BURST", "CREATED"},
		func(e api.Endpoint) []string {
			rate := "unlimited"
			if e.RatePerSec > 0 {
				rate = strconv.FormatFloat(e.RatePerSec, 'g', -1, 64)
			}
			return []string{e.ID, cell(e.Name), e.ConnectionID, e.Provider, strconv.FormatBool(e.Enabled),
				strconv.FormatInt(e.MaxBodyBytes, 10), rate, strconv.Itoa(e.Burst), timeCell(e.CreatedAt)}
		})
}

// EndpointsShowCmd shows one endpoint.
type EndpointsShowCmd struct {
	outputFlags
	ID string `arg:"" help:"Endpoint id."`
}

// Run shows the endpoint.
func (c *EndpointsShowCmd) Run(cl *Client) error {
	return cl.show(c.outputFlags, idPath("/api/v1/endpoints", c.ID))
}

// EndpointsEnableCmd enables an endpoint.
type EndpointsEnableCmd struct {
	outputFlags
	ID string `arg:"" help:"Endpoint id."`
}

// Run enables the endpoint.
func (c *EndpointsEnableCmd) Run(cl *Client) error { return setEnabled(cl, c.outputFlags, c.ID, true) }

// EndpointsDisableCmd disables an endpoint.
type EndpointsDisableCmd struct {
	outputFlags
	ID string `arg:"" help:"Endpoint id."`
}

// Run disables the endpoint.
func (c *EndpointsDisableCmd) Run(cl *Client) error {
	return setEnabled(cl, c.outputFlags, c.ID, false)
}

// EndpointsRotateCmd replaces an endpoint's token, so a lost URL is
// replaced, not read.
type EndpointsRotateCmd struct {
	outputFlags
	ID      string `arg:"" help:"Endpoint id."`
	Overlap string `name:"overlap" default:"24h" help:"How long the old URL keeps working beside the new one (0s to 168h; 0s: it stops at once)."`
}

// Run rotates the token and prints the new URL.
func (c *EndpointsRotateCmd) Run(cl *Client) error {
	if err := cl.send(c.outputFlags, http.MethodPost, idPath("/api/v1/endpoints", c.ID, "/rotate"), api.RotateEndpointRequest{Overlap: c.Overlap}); err != nil {
		return err
	}
	_, err := fmt.Fprintln(cl.stderr(), "intake: give the provider the new url now; it will not be shown again.")
	return err
}

func setEnabled(cl *Client, f outputFlags, id string, enabled bool) error {
	return cl.send(f, http.MethodPatch, idPath("/api/v1/endpoints", id), api.UpdateEndpointRequest{Enabled: &enabled})
}
