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
	Serve       ServeCmd         `cmd:"" help:"Run the gateway: ingress, workers, admin API."`
	Healthcheck HealthcheckCmd   `cmd:"" help:"Exit 0 when the local server is ready (/readyz), 1 otherwise: the container probe."`
	Version     VersionCmd       `cmd:"" help:"Print the version, commit and Go version."`
	VersionFlag kong.VersionFlag `name:"version" help:"Print the version and exit."`
	Client
}

func main() {
	var cli CLI
	ctx := kong.Parse(&cli,
		kong.Name("intake"),
		kong.Description("A self-hosted inbound webhook gateway."),
		kong.UsageOnError(),
		kong.Vars{"version": currentBuild().String()},
	)
	if err := ctx.Run(&cli.Client); err != nil {
		fmt.Fprintln(os.Stderr, "intake:", err)
		os.Exit(1)
	}
}
