package main

import (
	"context"
	"net/url"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// eventTypesDataSource is intake_event_types: the event-type catalog,
// every type the caller's connections (or one connection) have received.
type eventTypesDataSource struct{ c *client }

func newEventTypesDataSource() datasource.DataSource { return &eventTypesDataSource{} }

type eventTypesModel struct {
	ConnectionID types.String    `tfsdk:"connection_id"`
	Items        []eventTypeItem `tfsdk:"items"`
	Types        []types.String  `tfsdk:"types"`
}

type eventTypeItem struct {
	Type           types.String `tfsdk:"type"`
	ConnectionID   types.String `tfsdk:"connection_id"`
	ConnectionName types.String `tfsdk:"connection_name"`
	FirstSeenAt    types.String `tfsdk:"first_seen_at"`
	LastSeenAt     types.String `tfsdk:"last_seen_at"`
	Count24h       types.Int64  `tfsdk:"count_24h"`
	Total          types.Int64  `tfsdk:"total"`
}

func (d *eventTypesDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_event_types"
}

func (d *eventTypesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	str := schema.StringAttribute{Computed: true}
	num := schema.Int64Attribute{Computed: true}
	resp.Schema = schema.Schema{
		Description: "The event types intake has received (GET /event-types): a consumer's event_types can be checked against it.",
		Attributes: map[string]schema.Attribute{
			"connection_id": schema.StringAttribute{Optional: true, Description: "One connection's types only."},
			"types":         schema.ListAttribute{ElementType: types.StringType, Computed: true, Description: "The types alone."},
			"items": schema.ListNestedAttribute{Computed: true, NestedObject: schema.NestedAttributeObject{
				Attributes: map[string]schema.Attribute{"type": str, "connection_id": str, "connection_name": str,
					"first_seen_at": str, "last_seen_at": str, "count_24h": num, "total": num}}},
		},
	}
}

func (d *eventTypesDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.c = configured(req.ProviderData, &resp.Diagnostics)
}

func (d *eventTypesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m eventTypesModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	p := "/event-types"
	if id := m.ConnectionID.ValueString(); id != "" {
		p += "?connection_id=" + url.QueryEscape(id)
	}
	var list struct {
		Items []struct {
			Type           string `json:"type"`
			ConnectionID   string `json:"connection_id"`
			ConnectionName string `json:"connection_name"`
			FirstSeenAt    string `json:"first_seen_at"`
			LastSeenAt     string `json:"last_seen_at"`
			Count24h       int64  `json:"count_24h"`
			Total          int64  `json:"total"`
		} `json:"items"`
	}
	if _, err := d.c.call(ctx, "GET", p, nil, &list, ""); err != nil {
		addError(&resp.Diagnostics, "Reading the event types", err)
		return
	}
	m.Items, m.Types = []eventTypeItem{}, []types.String{}
	for _, it := range list.Items {
		m.Items = append(m.Items, eventTypeItem{Type: types.StringValue(it.Type), ConnectionID: types.StringValue(it.ConnectionID),
			ConnectionName: types.StringValue(it.ConnectionName), FirstSeenAt: types.StringValue(it.FirstSeenAt),
			LastSeenAt: types.StringValue(it.LastSeenAt), Count24h: types.Int64Value(it.Count24h), Total: types.Int64Value(it.Total)})
		m.Types = append(m.Types, types.StringValue(it.Type))
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
}
