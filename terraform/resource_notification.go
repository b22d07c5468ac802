package main

import (
	"context"
	"net/url"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// notificationResource is intake_notification: where an org's
// operational notifications go (PUT /orgs/{id}/notifications). Its id is
// the org's; destroying it sets every setting to none.
type notificationResource struct{ c *client }

func newNotificationResource() resource.Resource { return &notificationResource{} }

type notificationModel struct {
	ID              types.String `tfsdk:"id"`
	OrgID           types.String `tfsdk:"org_id"`
	URL             types.String `tfsdk:"url"`
	SlackWebhookURL types.String `tfsdk:"slack_webhook_url"`
	Topics          types.List   `tfsdk:"topics"`
	SigningSecret   types.String `tfsdk:"signing_secret"`
}

type apiNotifications struct {
	URL             string   `json:"url"`
	SlackWebhookURL string   `json:"slack_webhook_url"`
	Topics          []string `json:"topics"`
	SigningSecret   string   `json:"signing_secret,omitempty"`
}

func (r *notificationResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_notification"
}

func (r *notificationResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "An org's notification settings: the URL and Slack webhook its operators are told at, and the topics.",
		Attributes: map[string]schema.Attribute{
			"id": idAttribute(),
			"org_id": schema.StringAttribute{Required: true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"url": schema.StringAttribute{Optional: true,
				Description: "Receives signed JSON notifications; a query parameter named like a secret is shown by intake as ***."},
			"slack_webhook_url": schema.StringAttribute{Optional: true, Sensitive: true,
				Description: "A Slack incoming webhook; intake keeps it sealed and shows it masked."},
			"topics": schema.ListAttribute{ElementType: types.StringType, Required: true,
				Description: "message.dead, event.dead, consumer.tripped, …"},
			"signing_secret": schema.StringAttribute{Computed: true, Sensitive: true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
				Description:   "What url's notifications are signed with: shown by intake once, when the org's settings are first saved (null after an import, or when they were saved before)."},
		},
	}
}

func (r *notificationResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.c = configured(req.ProviderData, &resp.Diagnostics)
}

// ImportState takes the org's id.
func (r *notificationResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("org_id"), req.ID)...)
}

// maskedSlack is how intake shows a Slack URL: its scheme and host, the
// path (the credential) hidden.
func maskedSlack(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "…"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// read answers the settings; gone is true when the org has none (or no
// longer exists).
func (r *notificationResource) read(ctx context.Context, orgID string, prior notificationModel) (m notificationModel, etag string, gone bool, err error) {
	var n apiNotifications
	etag, err = r.c.call(ctx, "GET", apiPath("/orgs", orgID)+"/notifications", nil, &n, "")
	if notFound(err) {
		return prior, "", true, nil
	}
	if err != nil {
		return prior, "", false, err
	}
	m = prior
	m.ID, m.OrgID = types.StringValue(orgID), types.StringValue(orgID)
	if !strings.Contains(n.URL, "***") || !known(prior.URL) {
		m.URL = optString(n.URL, prior.URL)
	}
	switch {
	case n.SlackWebhookURL == "":
		m.SlackWebhookURL = optString("", prior.SlackWebhookURL)
	case known(prior.SlackWebhookURL) && maskedSlack(prior.SlackWebhookURL.ValueString()) == n.SlackWebhookURL:
		// the same, as far as intake shows it
	default:
		m.SlackWebhookURL = types.StringValue(n.SlackWebhookURL)
	}
	m.Topics = stringList(n.Topics)
	if m.SigningSecret.IsUnknown() {
		m.SigningSecret = types.StringNull()
	}
	return m, etag, n.URL == "" && n.SlackWebhookURL == "" && len(n.Topics) == 0, nil
}

func (r *notificationResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan notificationModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	org := plan.OrgID.ValueString()
	body := apiNotifications{URL: plan.URL.ValueString(), SlackWebhookURL: plan.SlackWebhookURL.ValueString(),
		Topics: listStrings(ctx, plan.Topics, &resp.Diagnostics)}
	if resp.Diagnostics.HasError() {
		return
	}
	var n apiNotifications
	if _, err := r.c.call(ctx, "PUT", apiPath("/orgs", org)+"/notifications", body, &n, ""); err != nil {
		addError(&resp.Diagnostics, "Setting the notifications of org "+org, err)
		return
	}
	plan.SigningSecret = types.StringNull()
	if n.SigningSecret != "" {
		plan.SigningSecret = types.StringValue(n.SigningSecret)
	}
	m, etag, _, err := r.read(ctx, org, plan)
	if err != nil {
		addError(&resp.Diagnostics, "Reading the notifications of org "+org, err)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	setETag(ctx, resp.Private, etag, &resp.Diagnostics)
}

func (r *notificationResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state notificationModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m, etag, gone, err := r.read(ctx, state.OrgID.ValueString(), state)
	if err != nil {
		addError(&resp.Diagnostics, "Reading the notifications of org "+state.OrgID.ValueString(), err)
		return
	}
	if gone {
		resp.State.RemoveResource(ctx)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	setETag(ctx, resp.Private, etag, &resp.Diagnostics)
}

func (r *notificationResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan notificationModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	org := plan.OrgID.ValueString()
	body := apiNotifications{URL: plan.URL.ValueString(), SlackWebhookURL: plan.SlackWebhookURL.ValueString(),
		Topics: listStrings(ctx, plan.Topics, &resp.Diagnostics)}
	if resp.Diagnostics.HasError() {
		return
	}
	if _, err := r.c.call(ctx, "PUT", apiPath("/orgs", org)+"/notifications", body, nil, getETag(ctx, req.Private)); err != nil {
		addError(&resp.Diagnostics, "Setting the notifications of org "+org, err)
		return
	}
	m, etag, _, err := r.read(ctx, org, plan)
	if err != nil {
		addError(&resp.Diagnostics, "Reading the notifications of org "+org, err)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	setETag(ctx, resp.Private, etag, &resp.Diagnostics)
}

// Delete sets every setting to none: the org is told nothing.
func (r *notificationResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state notificationModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	org := state.OrgID.ValueString()
	if _, err := r.c.call(ctx, "PUT", apiPath("/orgs", org)+"/notifications", apiNotifications{Topics: []string{}}, nil, ""); err != nil && !notFound(err) {
		addError(&resp.Diagnostics, "Clearing the notifications of org "+org, err)
	}
}
