// Command intake is the webhook gateway's server (`intake serve`) and the
// command-line client of its admin API.
package main

import (
	"fmt"
	"os"

	"github.com/alecthomas/kong"
)

// CLI is every intake command.
type CLI struct {
	Serve ServeCmd `cmd:"" help:"Run the gateway: ingress, workers, admin API."`
	Client
}

func main() {
	var cli CLI
	ctx := kong.Parse(&cli,
		kong.Name("intake"),
		kong.Description("A self-hosted inbound webhook gateway."),
		kong.UsageOnError(),
	)
	if err := ctx.Run(&cli.Client); err != nil {
		fmt.Fprintln(os.Stderr, "intake:", err)
		os.Exit(1)
	}
}
