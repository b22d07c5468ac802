package main

import "context"

// Loop is a background loop of the process: the worker, the router, the
// sweeper, the replay runner, the quota watch. serve starts them together
// and stops them together; Run returns once ctx ends.
type Loop interface {
	Run(ctx context.Context) error
}
