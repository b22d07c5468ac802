package main

import (
	"fmt"
	"net/http"
)

// deleteByID deletes the resource at prefix/id and says so.
func deleteByID(cl *Client, prefix, what, id string) error {
	if _, err := cl.call(http.MethodDelete, idPath(prefix, id), nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(cl.stdout(), "deleted %s %s\n", what, id)
	return nil
}

// ConnectionsDeleteCmd deletes a connection.
type ConnectionsDeleteCmd struct {
	ID string `arg:"" help:"The connection's id."`
}

// Run deletes it.
func (c *ConnectionsDeleteCmd) Run(cl *Client) error {
	return deleteByID(cl, "/api/v1/connections", "connection", c.ID)
}

// EndpointsDeleteCmd deletes an endpoint.
type EndpointsDeleteCmd struct {
	ID string `arg:"" help:"The endpoint's id."`
}

// Run deletes it.
func (c *EndpointsDeleteCmd) Run(cl *Client) error {
	return deleteByID(cl, "/api/v1/endpoints", "endpoint", c.ID)
}

// ConsumersDeleteCmd deletes a consumer.
type ConsumersDeleteCmd struct {
	ID string `arg:"" help:"The consumer's id."`
}

// Run deletes it.
func (c *ConsumersDeleteCmd) Run(cl *Client) error {
	return deleteByID(cl, "/api/v1/consumers", "consumer", c.ID)
}
