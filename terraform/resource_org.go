package main

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// orgResource is intake_org: a tenant (staff token only).
type orgResource struct{ c *client }

func newOrgResource() resource.Resource { return &orgResource{} }

type orgModel struct {
	ID            types.String `tfsdk:"id"`
	Name          types.String `tfsdk:"name"`
	BodyRetention types.String `tfsdk:"body_retention"`
	Retention     types.String `tfsdk:"retention"`
	APIKey        types.String `tfsdk:"api_key"`
}

type apiOrg struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	APIKey        string `json:"api_key,omitempty"`
	BodyRetention string `json:"body_retention,omitempty"`
	Retention     string `json:"retention,omitempty"`
}

func (r *orgResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_org"
}

func (r *orgResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "An org (tenant) of intake. Creating, renaming and deleting one takes the staff token.",
		Attributes: map[string]schema.Attribute{
			"id":   idAttribute(),
			"name": schema.StringAttribute{Required: true, Description: "Unique among orgs."},
			"body_retention": schema.StringAttribute{Optional: true,
				Description: "How long the org's payloads are kept (\"168h\"), at most the server's --body-retention; unset is the server's."},
			"retention": schema.StringAttribute{Optional: true,
				Description: "How long the org's messages and events are kept, at most the server's --retention; unset is the server's."},
			"api_key": schema.StringAttribute{Computed: true, Sensitive: true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
				Description:   "The org's first API key (admin), minted at creation; null after an import, since intake keeps only its hash."},
		},
	}
}

// idAttribute is every resource's id: the API's, fixed at creation.
func idAttribute() schema.StringAttribute {
	return schema.StringAttribute{Computed: true, Description: "The object's id in intake.",
		PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}}
}

func (r *orgResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.c = configured(req.ProviderData, &resp.Diagnostics)
}

func (r *orgResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}

// read answers the org as intake has it, in the terms of prior.
func (r *orgResource) read(ctx context.Context, id string, prior orgModel) (orgModel, string, error) {
	var o apiOrg
	etag, err := r.c.call(ctx, "GET", apiPath("/orgs", id), nil, &o, "")
	if err != nil {
		return prior, "", err
	}
	m := prior
	m.ID, m.Name = types.StringValue(o.ID), types.StringValue(o.Name)
	m.BodyRetention = optDuration(o.BodyRetention, prior.BodyRetention)
	m.Retention = optDuration(o.Retention, prior.Retention)
	if m.APIKey.IsUnknown() {
		m.APIKey = types.StringNull()
	}
	return m, etag, nil
}

// optDuration is an optional duration: null when unset and unconfigured,
// else written as the configuration wrote it when it is the same length.
func optDuration(api string, prior types.String) types.String {
	if api == "" && (prior.IsNull() || prior.IsUnknown()) {
		return types.StringNull()
	}
	return sameDuration(api, prior)
}

func (r *orgResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan orgModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var o apiOrg
	if _, err := r.c.call(ctx, "POST", "/orgs", map[string]string{"name": plan.Name.ValueString()}, &o, ""); err != nil {
		addError(&resp.Diagnostics, "Creating org "+plan.Name.ValueString(), err)
		return
	}
	plan.ID, plan.APIKey = types.StringValue(o.ID), types.StringValue(o.APIKey)
	// The id goes into the state at once, so a failure below leaves an
	// org OpenTofu knows of (and destroys), never one it lost.
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), plan.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("api_key"), plan.APIKey)...)
	if !plan.BodyRetention.IsNull() || !plan.Retention.IsNull() {
		if _, err := r.c.call(ctx, "PATCH", apiPath("/orgs", o.ID), orgPatch(plan), nil, ""); err != nil {
			addError(&resp.Diagnostics, "Setting the retention of org "+o.ID, err)
			return
		}
	}
	m, etag, err := r.read(ctx, o.ID, plan)
	if err != nil {
		addError(&resp.Diagnostics, "Reading org "+o.ID, err)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	setETag(ctx, resp.Private, etag, &resp.Diagnostics)
}

// orgPatch is every setting the plan has; a retention left unset is the
// server's again.
func orgPatch(m orgModel) map[string]any {
	return map[string]any{"name": m.Name.ValueString(), "body_retention": m.BodyRetention.ValueString(),
		"retention": m.Retention.ValueString()}
}

func (r *orgResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state orgModel
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
		addError(&resp.Diagnostics, "Reading org "+state.ID.ValueString(), err)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	setETag(ctx, resp.Private, etag, &resp.Diagnostics)
}

func (r *orgResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan orgModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id := plan.ID.ValueString()
	if _, err := r.c.call(ctx, "PATCH", apiPath("/orgs", id), orgPatch(plan), nil, getETag(ctx, req.Private)); err != nil {
		addError(&resp.Diagnostics, "Updating org "+id, err)
		return
	}
	m, etag, err := r.read(ctx, id, plan)
	if err != nil {
		addError(&resp.Diagnostics, "Reading org "+id, err)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	setETag(ctx, resp.Private, etag, &resp.Diagnostics)
}

func (r *orgResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state orgModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if _, err := r.c.call(ctx, "DELETE", apiPath("/orgs", state.ID.ValueString()), nil, nil, ""); err != nil && !notFound(err) {
		addError(&resp.Diagnostics, "Deleting org "+state.ID.ValueString(), err)
	}
}
