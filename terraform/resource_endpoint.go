package main

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/float64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// endpointResource is intake_endpoint: an ingress address of a
// connection. Its URL carries a token intake shows once, at creation.
type endpointResource struct{ c *client }

func newEndpointResource() resource.Resource { return &endpointResource{} }

type endpointModel struct {
	ID           types.String  `tfsdk:"id"`
	ConnectionID types.String  `tfsdk:"connection_id"`
	OrgID        types.String  `tfsdk:"org_id"`
	Name         types.String  `tfsdk:"name"`
	Enabled      types.Bool    `tfsdk:"enabled"`
	MaxBodyBytes types.Int64   `tfsdk:"max_body_bytes"`
	RatePerSec   types.Float64 `tfsdk:"rate_per_sec"`
	Burst        types.Int64   `tfsdk:"burst"`
	URL          types.String  `tfsdk:"url"`
	Token        types.String  `tfsdk:"token"`
}

type apiEndpoint struct {
	ID           string  `json:"id"`
	OrgID        string  `json:"org_id"`
	ConnectionID string  `json:"connection_id"`
	Name         string  `json:"name"`
	Token        string  `json:"token,omitempty"`
	URL          string  `json:"url,omitempty"`
	Enabled      bool    `json:"enabled"`
	MaxBodyBytes int64   `json:"max_body_bytes"`
	RatePerSec   float64 `json:"rate_per_sec"`
	Burst        int64   `json:"burst"`
}

func (r *endpointResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_endpoint"
}

func (r *endpointResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	computedKept := func(d string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, Sensitive: true, Description: d,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}}
	}
	resp.Schema = schema.Schema{
		Description: "An endpoint: the address a provider sends a connection's webhooks to.",
		Attributes: map[string]schema.Attribute{
			"id": idAttribute(),
			"connection_id": schema.StringAttribute{Required: true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"org_id": schema.StringAttribute{Computed: true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"name": schema.StringAttribute{Optional: true, Description: "Unique among the connection's named endpoints."},
			"enabled": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				Description: "Unset is true: an endpoint disabled outside OpenTofu shows as drift."},
			"max_body_bytes": schema.Int64Attribute{Optional: true, Computed: true,
				PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()}},
			"rate_per_sec": schema.Float64Attribute{Optional: true, Computed: true,
				PlanModifiers: []planmodifier.Float64{float64planmodifier.UseStateForUnknown()}},
			"burst": schema.Int64Attribute{Optional: true, Computed: true,
				PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()}},
			"url":   computedKept("The URL to give the provider, with the endpoint's token in it: shown by intake once, at creation (null after an import)."),
			"token": computedKept("The endpoint's token, shown by intake once, at creation (null after an import)."),
		},
	}
}

func (r *endpointResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.c = configured(req.ProviderData, &resp.Diagnostics)
}

func (r *endpointResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}

func (r *endpointResource) read(ctx context.Context, id string, prior endpointModel) (endpointModel, string, error) {
	var e apiEndpoint
	etag, err := r.c.call(ctx, "GET", apiPath("/endpoints", id), nil, &e, "")
	if err != nil {
		return prior, "", err
	}
	m := prior
	m.ID, m.ConnectionID, m.OrgID = types.StringValue(e.ID), types.StringValue(e.ConnectionID), types.StringValue(e.OrgID)
	m.Name = optString(e.Name, prior.Name)
	m.Enabled, m.MaxBodyBytes = types.BoolValue(e.Enabled), types.Int64Value(e.MaxBodyBytes)
	m.RatePerSec, m.Burst = types.Float64Value(e.RatePerSec), types.Int64Value(e.Burst)
	if m.URL.IsUnknown() {
		m.URL = types.StringNull()
	}
	if m.Token.IsUnknown() {
		m.Token = types.StringNull()
	}
	return m, etag, nil
}

// endpointSettings is the settings the plan gives; the others stay as
// intake has them.
func endpointSettings(m endpointModel) map[string]any {
	out := map[string]any{}
	if !m.Name.IsNull() {
		out["name"] = m.Name.ValueString()
	}
	if !m.Enabled.IsNull() && !m.Enabled.IsUnknown() {
		out["enabled"] = m.Enabled.ValueBool()
	}
	if !m.MaxBodyBytes.IsNull() && !m.MaxBodyBytes.IsUnknown() {
		out["max_body_bytes"] = m.MaxBodyBytes.ValueInt64()
	}
	if !m.RatePerSec.IsNull() && !m.RatePerSec.IsUnknown() {
		out["rate_per_sec"] = m.RatePerSec.ValueFloat64()
	}
	if !m.Burst.IsNull() && !m.Burst.IsUnknown() {
		out["burst"] = m.Burst.ValueInt64()
	}
	return out
}

func (r *endpointResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan endpointModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	body := endpointSettings(plan)
	delete(body, "enabled") // creation takes no enabled; an update below does
	body["connection_id"] = plan.ConnectionID.ValueString()
	var e apiEndpoint
	if _, err := r.c.call(ctx, "POST", "/endpoints", body, &e, ""); err != nil {
		addError(&resp.Diagnostics, "Creating an endpoint of connection "+plan.ConnectionID.ValueString(), err)
		return
	}
	plan.URL, plan.Token = types.StringValue(e.URL), types.StringValue(e.Token)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), e.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("url"), plan.URL)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("token"), plan.Token)...)
	if !plan.Enabled.IsNull() && !plan.Enabled.IsUnknown() && !plan.Enabled.ValueBool() {
		if _, err := r.c.call(ctx, "PATCH", apiPath("/endpoints", e.ID), map[string]any{"enabled": false}, nil, ""); err != nil {
			addError(&resp.Diagnostics, "Disabling endpoint "+e.ID, err)
			return
		}
	}
	m, etag, err := r.read(ctx, e.ID, plan)
	if err != nil {
		addError(&resp.Diagnostics, "Reading endpoint "+e.ID, err)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	setETag(ctx, resp.Private, etag, &resp.Diagnostics)
}

func (r *endpointResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state endpointModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m, etag, err := r.read(ctx, state.ID.ValueString(), state)
	if notFound(err) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addError(&resp.Diagnostics, "Reading endpoint "+state.ID.ValueString(), err)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	setETag(ctx, resp.Private, etag, &resp.Diagnostics)
}

func (r *endpointResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan endpointModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id := plan.ID.ValueString()
	patch := endpointSettings(plan)
	if plan.Name.IsNull() {
		patch["name"] = "" // unnamed again
	}
	if _, err := r.c.call(ctx, "PATCH", apiPath("/endpoints", id), patch, nil, getETag(ctx, req.Private)); err != nil {
		addError(&resp.Diagnostics, "Updating endpoint "+id, err)
		return
	}
	m, etag, err := r.read(ctx, id, plan)
	if err != nil {
		addError(&resp.Diagnostics, "Reading endpoint "+id, err)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	setETag(ctx, resp.Private, etag, &resp.Diagnostics)
}

func (r *endpointResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state endpointModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if _, err := r.c.call(ctx, "DELETE", apiPath("/endpoints", state.ID.ValueString()), nil, nil, ""); err != nil && !notFound(err) {
		addError(&resp.Diagnostics, "Deleting endpoint "+state.ID.ValueString(), err)
	}
}
