package main

// ServeCmd runs the gateway.
type ServeCmd struct{}

// Run starts the server.
func (c *ServeCmd) Run() error { return nil }
