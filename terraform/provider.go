package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// intakeProvider is the provider: where intake is and the token it is
// called with.
type intakeProvider struct{}

// New makes the provider, for providerserver.Serve.
func New() provider.Provider { return &intakeProvider{} }

type providerModel struct {
	Server types.String `tfsdk:"server"`
	Token  types.String `tfsdk:"token"`
}

func (p *intakeProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "intake"
}

func (p *intakeProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Manages an intake server's orgs, connections, endpoints, consumers, notification settings and API keys over its admin API.",
		Attributes: map[string]schema.Attribute{
			"server": schema.StringAttribute{Optional: true,
				Description: "intake's address, like https://intake.example.com (else INTAKE_URL, else http://localhost:8080)."},
			"token": schema.StringAttribute{Optional: true, Sensitive: true,
				Description: "The staff token or an org's API key (else INTAKE_TOKEN)."},
		},
	}
}

func (p *intakeProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	server := m.Server.ValueString()
	if server == "" {
		server = os.Getenv("INTAKE_URL")
	}
	if server == "" {
		server = "http://localhost:8080"
	}
	token := m.Token.ValueString()
	if token == "" {
		token = os.Getenv("INTAKE_TOKEN")
	}
	if m.Server.IsUnknown() || m.Token.IsUnknown() {
		// Known only after another resource's apply: a plan reads
		// nothing yet.
		return
	}
	if token == "" {
		resp.Diagnostics.AddError("No token for intake",
			"Set the provider's token (or INTAKE_TOKEN) to the staff token or an org's API key.")
		return
	}
	c := newClient(server, token)
	resp.ResourceData, resp.DataSourceData = c, c
}

func (p *intakeProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{newOrgResource, newConnectionResource, newEndpointResource,
		newConsumerResource, newNotificationResource, newKeyResource}
}

func (p *intakeProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{newEventTypesDataSource}
}

// configured takes the client Configure made; a resource's Configure is
// also called before the provider is configured, with nothing.
func configured(data any, diags *diag.Diagnostics) *client {
	if data == nil {
		return nil
	}
	c, ok := data.(*client)
	if !ok {
		diags.AddError("Unexpected provider data", "the intake provider handed over something other than its client")
	}
	return c
}

// privateState is the part of Terraform's private state each resource
// reads and writes: the ETag of the version last seen.
type privateState interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// getETag is the ETag a resource was last read or written at ("" when not
// known: a state from before, or an import).
func getETag(ctx context.Context, p privateState) string {
	if p == nil {
		return ""
	}
	raw, _ := p.GetKey(ctx, "etag")
	var etag string
	if len(raw) > 0 && json.Unmarshal(raw, &etag) != nil {
		return ""
	}
	return etag
}

func setETag(ctx context.Context, p privateState, etag string, diags *diag.Diagnostics) {
	if p == nil || etag == "" {
		return
	}
	raw, _ := json.Marshal(etag)
	diags.Append(p.SetKey(ctx, "etag", raw)...)
}

// optString is an optional string attribute as the API answers it: ""
// stays null where the configuration left it null, so an unset field does
// not differ from its empty answer.
func optString(api string, prior types.String) types.String {
	if api == "" && prior.IsNull() {
		return types.StringNull()
	}
	return types.StringValue(api)
}

// sameDuration keeps the configuration's way of writing a duration ("72h")
// when the API answers the same length another way ("72h0m0s"); "" and "0s"
// are alike.
func sameDuration(api string, prior types.String) types.String {
	if prior.IsNull() || prior.IsUnknown() {
		return types.StringValue(shortDuration(api))
	}
	a, errA := parseDuration(api)
	b, errB := parseDuration(prior.ValueString())
	if errA == nil && errB == nil && a == b {
		return prior
	}
	return types.StringValue(api)
}

// shortDuration writes a duration as people do, for a state that has no
// way of writing it yet (an import): "720h0m0s" as "720h", "1h30m0s" as
// "1h30m".
func shortDuration(s string) string {
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	return time.ParseDuration(s)
}

// stringList is a list of strings as a Terraform value.
func stringList(items []string) types.List {
	vals := make([]attr.Value, 0, len(items))
	for _, s := range items {
		vals = append(vals, types.StringValue(s))
	}
	return types.ListValueMust(types.StringType, vals)
}

// strings reads a list of strings out of a Terraform value.
func listStrings(ctx context.Context, l types.List, diags *diag.Diagnostics) []string {
	out := []string{}
	if l.IsNull() || l.IsUnknown() {
		return out
	}
	diags.Append(l.ElementsAs(ctx, &out, false)...)
	return out
}

// known reports whether a value is set in the plan: neither null nor
// unknown.
func known(v interface {
	IsNull() bool
	IsUnknown() bool
}) bool {
	return !v.IsNull() && !v.IsUnknown()
}
