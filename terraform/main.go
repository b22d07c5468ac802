// Command terraform-provider-intake is the OpenTofu and Terraform provider
// of intake: orgs, connections, endpoints, consumers, notification settings
// and API keys as resources, managed over the admin API (DESIGN §25).
//
//	go build -o terraform-provider-intake
//
// makes the plugin; a dev_overrides installation (README: Managing intake
// with OpenTofu or Terraform) points tofu at it.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
)

// address is the provider's source address.
const address = "registry.opentofu.org/intakehq/intake"

func main() {
	debug := flag.Bool("debug", false, "run with support for debuggers (delve), printing TF_REATTACH_PROVIDERS")
	flag.Parse()
	if err := serve(*debug); err != nil {
		log.Fatal(err)
	}
}

func serve(debug bool) error {
	return providerserver.Serve(context.Background(), New, providerserver.ServeOpts{Address: address, Debug: debug})
}
