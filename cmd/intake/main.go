// Command intake is the webhook gateway's server (`intake serve`) and the
// command-line client of its admin API.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/alecthomas/kong"
)

// CLI is every intake command.
type CLI struct {
	Serve       ServeCmd         `cmd:"" help:"Run the gateway: ingress, workers, admin API."`
	Restore     RestoreCmd       `cmd:"" help:"Rebuild a data directory's store from the replica serve --replicate shipped it to, to its latest or a point in time."`
	Healthcheck HealthcheckCmd   `cmd:"" help:"Exit 0 when the local server is ready (/readyz), 1 otherwise: the container probe."`
	Version     VersionCmd       `cmd:"" help:"Print the version, commit and Go version."`
	VersionFlag kong.VersionFlag `name:"version" help:"Print the version and exit."`
	Client
}

func main() {
	var cli CLI
	parser := kong.Must(&cli,
		kong.Name("intake"),
		kong.Description("A self-hosted inbound webhook gateway."),
		kong.UsageOnError(),
		kong.Vars{"version": currentBuild().String()},
	)
	ctx, err := parser.Parse(os.Args[1:])
	parser.FatalIfErrorf(serverFlagHint(err))
	if err := ctx.Run(&cli.Client); err != nil {
		fmt.Fprintln(os.Stderr, "intake:", err)
		os.Exit(1)
	}
}

// serverFlagHint says where the server's address went when a command line
// gives --url to a command that has no address of its own: the server is
// --server (or INTAKE_URL); --url is what a command sets, such as a
// consumer's URL.
func serverFlagHint(err error) error {
	if err == nil || !strings.Contains(err.Error(), "unknown flag --url") {
		return err
	}
	return errors.New(err.Error() + ": the intake server's address is --server (or INTAKE_URL); --url is the address a command sets, such as a consumer's")
}
