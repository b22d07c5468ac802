package main

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// connectionResource is intake_connection: an org's link to a provider
// account, with its signing secrets (sealed by intake, never read back).
type connectionResource struct{ c *client }

func newConnectionResource() resource.Resource { return &connectionResource{} }

type connectionModel struct {
	ID           types.String `tfsdk:"id"`
	OrgID        types.String `tfsdk:"org_id"`
	ProviderCode types.String `tfsdk:"provider_code"`
	Name         types.String `tfsdk:"name"`
	Secrets      types.List   `tfsdk:"secrets"`
	Config       types.String `tfsdk:"config"`
	Filter       types.String `tfsdk:"filter"`
}

type apiConnection struct {
	ID          string          `json:"id"`
	OrgID       string          `json:"org_id"`
	Provider    string          `json:"provider"`
	Name        string          `json:"name"`
	Config      json.RawMessage `json:"config"`
	SecretCount *int            `json:"secret_count"`
	Filter      string          `json:"filter"`
}

func (r *connectionResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_connection"
}

func (r *connectionResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A connection: an org's link to one provider account, whose webhooks intake verifies with its secrets.",
		Attributes: map[string]schema.Attribute{
			"id":     idAttribute(),
			"org_id": orgIDAttribute(),
			"provider_code": schema.StringAttribute{Required: true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Description:   "The provider adapter (\"stripe\", \"github\", \"hmac\", …): the API's provider field, named so since provider is a word Terraform reserves."},
			"name": schema.StringAttribute{Required: true},
			"secrets": schema.ListAttribute{ElementType: types.StringType, Optional: true, Sensitive: true,
				Description: "The signing secrets, several while a provider rotates. intake seals them and never shows them: a change replaces them (PUT /connections/{id}/secrets), and a count changed outside OpenTofu shows as a change back. Null after an import."},
			"config": schema.StringAttribute{Optional: true,
				Description: "The provider's config as a JSON object (jsonencode({...})), such as an hmac connection's script."},
			"filter": schema.StringAttribute{Optional: true, Description: "A CEL expression each interpreted event must pass."},
		},
	}
}

// orgIDAttribute is a child object's org: needed with the staff token,
// taken from the key with an org's API key; another org is another object.
func orgIDAttribute() schema.StringAttribute {
	return schema.StringAttribute{Optional: true, Computed: true,
		PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
		Description:   "The org; required with the staff token, the key's own org with an org's API key."}
}

func (r *connectionResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.c = configured(req.ProviderData, &resp.Diagnostics)
}

func (r *connectionResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}

func (r *connectionResource) read(ctx context.Context, id string, prior connectionModel) (connectionModel, string, error) {
	var c apiConnection
	etag, err := r.c.call(ctx, "GET", apiPath("/connections", id), nil, &c, "")
	if err != nil {
		return prior, "", err
	}
	m := prior
	m.ID, m.OrgID, m.ProviderCode, m.Name = types.StringValue(c.ID), types.StringValue(c.OrgID), types.StringValue(c.Provider), types.StringValue(c.Name)
	m.Filter = optString(c.Filter, prior.Filter)
	m.Config = sameJSON(c.Config, prior.Config)
	// The secrets are never shown; their count is. Another count than
	// the state's means they were replaced outside OpenTofu: the state
	// forgets them, so the next plan puts the configured ones back.
	if !prior.Secrets.IsNull() && !prior.Secrets.IsUnknown() && c.SecretCount != nil && *c.SecretCount != len(prior.Secrets.Elements()) {
		m.Secrets = types.ListNull(types.StringType)
	}
	if m.Secrets.IsUnknown() {
		m.Secrets = types.ListNull(types.StringType)
	}
	return m, etag, nil
}

// sameJSON is a JSON attribute as the API answers it, kept as the
// configuration wrote it while it means the same; an empty object or null
// stays null where nothing was configured.
func sameJSON(api json.RawMessage, prior types.String) types.String {
	var a any
	if len(bytes.TrimSpace(api)) > 0 {
		if err := json.Unmarshal(api, &a); err != nil {
			return types.StringValue(string(api))
		}
	}
	if m, ok := a.(map[string]any); a == nil || ok && len(m) == 0 {
		if prior.IsNull() || prior.IsUnknown() {
			return types.StringNull()
		}
	}
	if !prior.IsNull() && !prior.IsUnknown() {
		var b any
		if json.Unmarshal([]byte(prior.ValueString()), &b) == nil && reflect.DeepEqual(a, b) {
			return prior
		}
	}
	if a == nil {
		return types.StringNull()
	}
	out, _ := json.Marshal(a)
	return types.StringValue(string(out))
}

func (r *connectionResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan connectionModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	body := map[string]any{"org_id": plan.OrgID.ValueString(), "provider": plan.ProviderCode.ValueString(),
		"name": plan.Name.ValueString(), "secrets": listStrings(ctx, plan.Secrets, &resp.Diagnostics)}
	if !plan.Config.IsNull() {
		body["config"] = json.RawMessage(plan.Config.ValueString())
	}
	if resp.Diagnostics.HasError() {
		return
	}
	var c apiConnection
	if _, err := r.c.call(ctx, "POST", "/connections", body, &c, ""); err != nil {
		addError(&resp.Diagnostics, "Creating connection "+plan.Name.ValueString(), err)
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), c.ID)...)
	if !plan.Filter.IsNull() {
		if _, err := r.c.call(ctx, "PATCH", apiPath("/connections", c.ID), map[string]any{"filter": plan.Filter.ValueString()}, nil, ""); err != nil {
			addError(&resp.Diagnostics, "Setting the filter of connection "+c.ID, err)
			return
		}
	}
	m, etag, err := r.read(ctx, c.ID, plan)
	if err != nil {
		addError(&resp.Diagnostics, "Reading connection "+c.ID, err)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	setETag(ctx, resp.Private, etag, &resp.Diagnostics)
}

func (r *connectionResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state connectionModel
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
		addError(&resp.Diagnostics, "Reading connection "+state.ID.ValueString(), err)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	setETag(ctx, resp.Private, etag, &resp.Diagnostics)
}

func (r *connectionResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state connectionModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id := state.ID.ValueString()
	patch := map[string]any{"name": plan.Name.ValueString(), "filter": plan.Filter.ValueString()}
	if !plan.Config.Equal(state.Config) {
		config := plan.Config.ValueString()
		if plan.Config.IsNull() {
			config = "{}"
		}
		patch["config"] = json.RawMessage(config)
	}
	if _, err := r.c.call(ctx, "PATCH", apiPath("/connections", id), patch, nil, getETag(ctx, req.Private)); err != nil {
		addError(&resp.Diagnostics, "Updating connection "+id, err)
		return
	}
	if !plan.Secrets.Equal(state.Secrets) {
		secrets := listStrings(ctx, plan.Secrets, &resp.Diagnostics)
		if resp.Diagnostics.HasError() {
			return
		}
		if _, err := r.c.call(ctx, "PUT", apiPath("/connections", id)+"/secrets", map[string]any{"secrets": secrets}, nil, ""); err != nil {
			addError(&resp.Diagnostics, "Replacing the secrets of connection "+id, err)
			return
		}
	}
	m, etag, err := r.read(ctx, id, plan)
	if err != nil {
		addError(&resp.Diagnostics, "Reading connection "+id, err)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	setETag(ctx, resp.Private, etag, &resp.Diagnostics)
}

func (r *connectionResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state connectionModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if _, err := r.c.call(ctx, "DELETE", apiPath("/connections", state.ID.ValueString()), nil, nil, ""); err != nil && !notFound(err) {
		addError(&resp.Diagnostics, "Deleting connection "+state.ID.ValueString(), err)
	}
}
