package main

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// TestAcceptance runs terraform-plugin-testing's acceptance framework on
// the same tofu, the provider served in this process: create, a refresh
// with nothing to do, import with every attribute verified, a change made
// outside OpenTofu seen as a non-empty plan, and destroy checked in intake.
func TestAcceptance(t *testing.T) {
	h := newHarness(t)
	t.Setenv("TF_ACC", "1")
	t.Setenv("TF_ACC_TERRAFORM_PATH", tofuBinary)
	t.Setenv("TF_ACC_PROVIDER_HOST", "registry.opentofu.org")
	t.Setenv("TF_ACC_PROVIDER_NAMESPACE", "intakehq")
	t.Setenv("TF_CLI_CONFIG_FILE", "")
	t.Setenv("CHECKPOINT_DISABLE", "1")
	t.Setenv("INTAKE_URL", h.url)
	t.Setenv("INTAKE_TOKEN", staffToken)
	config := func(name string) string {
		return fmt.Sprintf(`
terraform {
  required_providers {
    intake = { source = "intakehq/intake" }
  }
}

resource "intake_org" "acme" {
  name = "acme"
}

resource "intake_consumer" "app" {
  org_id             = intake_org.acme.id
  name               = %q
  app                = "crm"
  url                = "http://127.0.0.1:9/hooks"
  event_types        = ["github.*", "stripe.invoice.*"]
  auto_disable_after = "24h"
}
`, name)
	}
	var orgID, consumerID string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: map[string]func() (tfprotov6.ProviderServer, error){
			"intake": providerserver.NewProtocol6WithError(New()),
		},
		CheckDestroy: func(*terraform.State) error {
			for _, p := range []string{"/orgs/" + orgID, "/consumers/" + consumerID} {
				if code := h.api("GET", p, nil, nil); code != 404 {
					return fmt.Errorf("GET %s answers %d after destroy", p, code)
				}
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: config("crm"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("intake_consumer.app", "name", "crm"),
					resource.TestCheckResourceAttr("intake_consumer.app", "event_types.1", "stripe.invoice.*"),
					resource.TestCheckResourceAttr("intake_consumer.app", "auto_disable_after", "24h"),
					resource.TestCheckResourceAttrSet("intake_consumer.app", "signing_secret"),
					resource.TestCheckResourceAttrPair("intake_consumer.app", "org_id", "intake_org.acme", "id"),
					func(s *terraform.State) error {
						orgID = s.RootModule().Resources["intake_org.acme"].Primary.ID
						consumerID = s.RootModule().Resources["intake_consumer.app"].Primary.ID
						var c struct{ Name, App string }
						if code := h.api("GET", "/consumers/"+consumerID, nil, &c); code != 200 || c.Name != "crm" || c.App != "crm" {
							return fmt.Errorf("GET the consumer: %d %+v", code, c)
						}
						return nil
					},
				),
			},
			{
				ResourceName:            "intake_consumer.app",
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"signing_secret"},
			},
			{
				PreConfig: func() {
					if code := h.api("PATCH", "/consumers/"+consumerID, map[string]any{"enabled": false}, nil); code != 200 {
						t.Fatalf("PATCH the consumer: %d", code)
					}
				},
				Config:             config("crm"),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config: config("crm-renamed"),
				Check:  resource.TestCheckResourceAttr("intake_consumer.app", "enabled", "true"),
			},
		},
	})
}
