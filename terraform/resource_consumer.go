package main

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
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

// consumerResource is intake_consumer: an application events are
// delivered to, signed with a secret intake shows once, at creation.
type consumerResource struct{ c *client }

func newConsumerResource() resource.Resource { return &consumerResource{} }

type consumerModel struct {
	ID               types.String  `tfsdk:"id"`
	OrgID            types.String  `tfsdk:"org_id"`
	Name             types.String  `tfsdk:"name"`
	App              types.String  `tfsdk:"app"`
	URL              types.String  `tfsdk:"url"`
	EventTypes       types.List    `tfsdk:"event_types"`
	Completion       types.Bool    `tfsdk:"completion"`
	Enabled          types.Bool    `tfsdk:"enabled"`
	Filter           types.String  `tfsdk:"filter"`
	Transform        types.String  `tfsdk:"transform"`
	Paused           types.Bool    `tfsdk:"paused"`
	RatePerSec       types.Float64 `tfsdk:"rate_per_sec"`
	MaxInFlight      types.Int64   `tfsdk:"max_in_flight"`
	Ordering         types.String  `tfsdk:"ordering"`
	RetryAttempts    types.Int64   `tfsdk:"retry_attempts"`
	RetryBase        types.String  `tfsdk:"retry_base"`
	BreakerFailures  types.Int64   `tfsdk:"breaker_failures"`
	AutoDisableAfter types.String  `tfsdk:"auto_disable_after"`
	SigningSecret    types.String  `tfsdk:"signing_secret"`
}

type apiConsumer struct {
	ID               string   `json:"id"`
	OrgID            string   `json:"org_id"`
	Name             string   `json:"name"`
	App              string   `json:"app"`
	URL              string   `json:"url"`
	EventTypes       []string `json:"event_types"`
	Completion       bool     `json:"completion"`
	Enabled          bool     `json:"enabled"`
	Filter           string   `json:"filter"`
	Transform        string   `json:"transform"`
	Paused           bool     `json:"paused"`
	RatePerSec       float64  `json:"rate_per_sec"`
	MaxInFlight      *int64   `json:"max_in_flight"`
	Ordering         string   `json:"ordering"`
	RetryAttempts    int64    `json:"retry_attempts"`
	RetryBase        string   `json:"retry_base"`
	BreakerFailures  int64    `json:"breaker_failures"`
	AutoDisableAfter string   `json:"auto_disable_after"`
	SigningSecret    string   `json:"signing_secret,omitempty"`
}

func (r *consumerResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_consumer"
}

func (r *consumerResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	// Unset, a switch is its default, so a change made outside OpenTofu
	// shows as drift and is undone.
	optBool := func(def bool, d string) schema.BoolAttribute {
		return schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(def), Description: d}
	}
	optInt := func(d string) schema.Int64Attribute {
		return schema.Int64Attribute{Optional: true, Computed: true, Description: d,
			PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()}}
	}
	optDur := func(d string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, Computed: true, Description: d,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}}
	}
	resp.Schema = schema.Schema{
		Description: "A consumer: an application intake delivers an org's events to, signed (Standard Webhooks) with its signing secret.",
		Attributes: map[string]schema.Attribute{
			"id":     idAttribute(),
			"org_id": orgIDAttribute(),
			"name":   schema.StringAttribute{Required: true},
			"app": schema.StringAttribute{Required: true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"url": schema.StringAttribute{Required: true,
				Description: "Where events go (https://, nats://, redis://, kafka://, amqp://). intake shows a credential in it as ***; pass one through a sensitive variable."},
			"event_types": schema.ListAttribute{ElementType: types.StringType, Required: true,
				Description: "Exact types, prefixes (\"stripe.invoice.*\") or \"*\"."},
			"completion": optBool(false, "Receives the events of its app's linked records."),
			"enabled":    optBool(true, "false registers the consumer without sending it anything."),
			"filter":     schema.StringAttribute{Optional: true, Description: "A CEL expression an event must pass."},
			"transform":  schema.StringAttribute{Optional: true, Description: "A CEL expression reshaping the event's data."},
			"paused":     optBool(false, "Holds deliveries; they spend no attempt."),
			"rate_per_sec": schema.Float64Attribute{Optional: true, Computed: true, Description: "Calls per second at most; 0 is no cap.",
				PlanModifiers: []planmodifier.Float64{float64planmodifier.UseStateForUnknown()}},
			"max_in_flight":      schema.Int64Attribute{Optional: true, Description: "Calls in flight at most; unset is no cap."},
			"ordering":           schema.StringAttribute{Optional: true, Description: "\"subject\" or a CEL key: one key's events in order."},
			"retry_attempts":     optInt("Attempts before an event is dead for the consumer."),
			"retry_base":         optDur("The first retry's wait, growing fourfold."),
			"breaker_failures":   optInt("Consecutive failed calls that open the circuit breaker."),
			"auto_disable_after": optDur("Continuous failure for this long disables the consumer."),
			"signing_secret": schema.StringAttribute{Computed: true, Sensitive: true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
				Description:   "The secret deliveries are signed with: shown by intake once, at creation (null after an import)."},
		},
	}
}

func (r *consumerResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.c = configured(req.ProviderData, &resp.Diagnostics)
}

func (r *consumerResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}

func (r *consumerResource) read(ctx context.Context, id string, prior consumerModel) (consumerModel, string, error) {
	var c apiConsumer
	etag, err := r.c.call(ctx, "GET", apiPath("/consumers", id), nil, &c, "")
	if err != nil {
		return prior, "", err
	}
	m := prior
	m.ID, m.OrgID, m.Name, m.App = types.StringValue(c.ID), types.StringValue(c.OrgID), types.StringValue(c.Name), types.StringValue(c.App)
	// A URL with a credential in it comes back with *** in its place:
	// the configuration's is kept while intake cannot show it.
	if !strings.Contains(c.URL, "***") || prior.URL.IsNull() || prior.URL.IsUnknown() {
		m.URL = types.StringValue(c.URL)
	}
	m.EventTypes = stringList(c.EventTypes)
	m.Completion, m.Enabled, m.Paused = types.BoolValue(c.Completion), types.BoolValue(c.Enabled), types.BoolValue(c.Paused)
	m.Filter, m.Transform = optString(c.Filter, prior.Filter), optString(c.Transform, prior.Transform)
	m.Ordering = optString(c.Ordering, prior.Ordering)
	m.RatePerSec = types.Float64Value(c.RatePerSec)
	m.MaxInFlight = types.Int64Null()
	if c.MaxInFlight != nil && *c.MaxInFlight != 0 {
		m.MaxInFlight = types.Int64Value(*c.MaxInFlight)
	}
	m.RetryAttempts, m.BreakerFailures = types.Int64Value(c.RetryAttempts), types.Int64Value(c.BreakerFailures)
	m.RetryBase = sameDuration(c.RetryBase, prior.RetryBase)
	m.AutoDisableAfter = sameDuration(c.AutoDisableAfter, prior.AutoDisableAfter)
	if m.SigningSecret.IsUnknown() {
		m.SigningSecret = types.StringNull()
	}
	return m, etag, nil
}

// consumerSettings is the body of a creation or an update: every setting
// the plan has, and what an unset optional one comes back to.
func consumerSettings(ctx context.Context, m consumerModel, diags *diag.Diagnostics) map[string]any {
	out := map[string]any{"name": m.Name.ValueString(), "url": m.URL.ValueString(),
		"filter": m.Filter.ValueString(), "transform": m.Transform.ValueString(), "ordering": m.Ordering.ValueString(),
		"max_in_flight": m.MaxInFlight.ValueInt64(), "event_types": listStrings(ctx, m.EventTypes, diags)}
	if known(m.Completion) {
		out["completion"] = m.Completion.ValueBool()
	}
	if known(m.Enabled) {
		out["enabled"] = m.Enabled.ValueBool()
	}
	if known(m.Paused) {
		out["paused"] = m.Paused.ValueBool()
	}
	if known(m.RatePerSec) {
		out["rate_per_sec"] = m.RatePerSec.ValueFloat64()
	}
	if known(m.BreakerFailures) {
		out["breaker_failures"] = m.BreakerFailures.ValueInt64()
	}
	if known(m.AutoDisableAfter) && m.AutoDisableAfter.ValueString() != "" {
		out["auto_disable_after"] = m.AutoDisableAfter.ValueString()
	}
	retry := map[string]any{}
	if known(m.RetryAttempts) {
		retry["attempts"] = m.RetryAttempts.ValueInt64()
	}
	if known(m.RetryBase) && m.RetryBase.ValueString() != "" { // "": the server's, which intake reads back as ""
		retry["base"] = m.RetryBase.ValueString()
	}
	if len(retry) > 0 {
		out["retry"] = retry
	}
	return out
}

func (r *consumerResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan consumerModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	body := consumerSettings(ctx, plan, &resp.Diagnostics)
	body["org_id"], body["app"] = plan.OrgID.ValueString(), plan.App.ValueString()
	if resp.Diagnostics.HasError() {
		return
	}
	var c apiConsumer
	if _, err := r.c.call(ctx, "POST", "/consumers", body, &c, ""); err != nil {
		addError(&resp.Diagnostics, "Creating consumer "+plan.Name.ValueString(), err)
		return
	}
	plan.SigningSecret = types.StringValue(c.SigningSecret)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), c.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("signing_secret"), plan.SigningSecret)...)
	m, etag, err := r.read(ctx, c.ID, plan)
	if err != nil {
		addError(&resp.Diagnostics, "Reading consumer "+c.ID, err)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	setETag(ctx, resp.Private, etag, &resp.Diagnostics)
}

func (r *consumerResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state consumerModel
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
		addError(&resp.Diagnostics, "Reading consumer "+state.ID.ValueString(), err)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	setETag(ctx, resp.Private, etag, &resp.Diagnostics)
}

func (r *consumerResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan consumerModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id := plan.ID.ValueString()
	body := consumerSettings(ctx, plan, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if _, err := r.c.call(ctx, "PATCH", apiPath("/consumers", id), body, nil, getETag(ctx, req.Private)); err != nil {
		addError(&resp.Diagnostics, "Updating consumer "+id, err)
		return
	}
	m, etag, err := r.read(ctx, id, plan)
	if err != nil {
		addError(&resp.Diagnostics, "Reading consumer "+id, err)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	setETag(ctx, resp.Private, etag, &resp.Diagnostics)
}

func (r *consumerResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state consumerModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if _, err := r.c.call(ctx, "DELETE", apiPath("/consumers", state.ID.ValueString()), nil, nil, ""); err != nil && !notFound(err) {
		addError(&resp.Diagnostics, "Deleting consumer "+state.ID.ValueString(), err)
	}
}
