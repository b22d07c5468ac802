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

// keyResource is intake_key: another API key of an org, with a role.
// Nothing of a key changes: another role or name is another key, and
// destroying one revokes it.
type keyResource struct{ c *client }

func newKeyResource() resource.Resource { return &keyResource{} }

type keyModel struct {
	ID     types.String `tfsdk:"id"`
	OrgID  types.String `tfsdk:"org_id"`
	Role   types.String `tfsdk:"role"`
	Name   types.String `tfsdk:"name"`
	Prefix types.String `tfsdk:"prefix"`
	Key    types.String `tfsdk:"key"`
}

type apiKey struct {
	ID        string  `json:"id"`
	OrgID     string  `json:"org_id"`
	Prefix    string  `json:"prefix"`
	Name      string  `json:"name"`
	Role      string  `json:"role"`
	RevokedAt *string `json:"revoked_at"`
	Key       string  `json:"key,omitempty"`
}

func (r *keyResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_key"
}

func (r *keyResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	kept := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	resp.Schema = schema.Schema{
		Description: "An API key of an org, with a role; the key is shown by intake once, at creation.",
		Attributes: map[string]schema.Attribute{
			"id": idAttribute(),
			"org_id": schema.StringAttribute{Optional: true, Computed: true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
				Description:   "The org; required with the staff token."},
			"role": schema.StringAttribute{Optional: true, Computed: true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
				Description:   "viewer, operator or admin (the default)."},
			"name":   schema.StringAttribute{Optional: true, PlanModifiers: replace, Description: "Who holds it, at most 100 bytes."},
			"prefix": schema.StringAttribute{Computed: true, PlanModifiers: kept, Description: "The key's first characters, as lists show it."},
			"key": schema.StringAttribute{Computed: true, Sensitive: true, PlanModifiers: kept,
				Description: "The key: shown by intake once, at creation (null after an import)."},
		},
	}
}

func (r *keyResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.c = configured(req.ProviderData, &resp.Diagnostics)
}

func (r *keyResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}

// read finds the key among the caller's keys; gone is true when it is
// not there or revoked.
func (r *keyResource) read(ctx context.Context, id string, prior keyModel) (m keyModel, gone bool, err error) {
	var list struct {
		Items []apiKey `json:"items"`
	}
	if _, err := r.c.call(ctx, "GET", "/keys", nil, &list, ""); err != nil {
		return prior, false, err
	}
	for _, k := range list.Items {
		if k.ID != id {
			continue
		}
		if k.RevokedAt != nil {
			return prior, true, nil
		}
		m = prior
		m.ID, m.OrgID, m.Role, m.Prefix = types.StringValue(k.ID), types.StringValue(k.OrgID), types.StringValue(k.Role), types.StringValue(k.Prefix)
		m.Name = optString(k.Name, prior.Name)
		if m.Key.IsUnknown() {
			m.Key = types.StringNull()
		}
		return m, false, nil
	}
	return prior, true, nil
}

func (r *keyResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan keyModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	body := map[string]string{"org_id": plan.OrgID.ValueString(), "role": plan.Role.ValueString(), "name": plan.Name.ValueString()}
	var k apiKey
	if _, err := r.c.call(ctx, "POST", "/keys", body, &k, ""); err != nil {
		addError(&resp.Diagnostics, "Creating a key of org "+plan.OrgID.ValueString(), err)
		return
	}
	plan.ID, plan.OrgID, plan.Role, plan.Prefix = types.StringValue(k.ID), types.StringValue(k.OrgID), types.StringValue(k.Role), types.StringValue(k.Prefix)
	plan.Key = types.StringValue(k.Key)
	plan.Name = optString(k.Name, plan.Name)
	resp.Diagnostics.Append(resp.State.Set(ctx, plan)...)
}

func (r *keyResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state keyModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m, gone, err := r.read(ctx, state.ID.ValueString(), state)
	if err != nil {
		addError(&resp.Diagnostics, "Reading key "+state.ID.ValueString(), err)
		return
	}
	if gone {
		resp.State.RemoveResource(ctx)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
}

// Update is never called: every attribute replaces the key.
func (r *keyResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.Diagnostics.AddError("A key does not change", "intake keys are replaced, not changed; this is a bug of the provider")
}

// Delete revokes the key.
func (r *keyResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state keyModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if _, err := r.c.call(ctx, "DELETE", apiPath("/keys", state.ID.ValueString()), nil, nil, ""); err != nil && !notFound(err) {
		addError(&resp.Diagnostics, "Revoking key "+state.ID.ValueString(), err)
	}
}
