package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/control"
)

// TestEveryRouteKeepsAnotherOrgsRowsOutOfReach calls every authenticated
// route with one org's key against another org's rows. A route added
// without a case here fails the test.
func TestEveryRouteKeepsAnotherOrgsRowsOutOfReach(t *testing.T) {
	e := newEnv(t)
	acme, globex := e.newTenant("acme"), e.newTenant("globex")
	ev := e.event(acme, "test.thing")
	e.route(ev, intake.EventNoConsumer)
	e.learn(ev)
	msg := e.ingest(acme, "", http.Header{}, `{"n":1}`)
	cons := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, api.CreateConsumerRequest{
		Name: "billing", App: "billing", URL: "http://127.0.0.1:9/hooks", EventTypes: []string{"*"}})
	iss := e.seedIssue(acme, cons)
	must[api.Notifications](e, 200, "PUT", "/api/v1/orgs/"+acme.org.ID+"/notifications", acme.org.APIKey,
		api.NotificationsRequest{URL: "http://127.0.0.1:9/notify", Topics: []string{intake.NoticeEventDead}})
	now := e.clock.Now()
	keys := must[api.List[api.APIKey]](e, 200, "GET", "/api/v1/keys", acme.org.APIKey, nil)
	acmeKey := keys.Items[0].ID
	secrets := map[string]string{"org": acme.org.ID, "connection": acme.conn.ID, "endpoint": acme.ep.ID, "message": msg.ID,
		"event": ev.ID, "consumer": cons.ID}

	type call struct {
		path string
		body any
		want []int // acceptable statuses for the other org
	}
	notFound, forbidden, emptyList := []int{404}, []int{403}, []int{200}
	cases := map[string]call{
		"POST /api/v1/orgs":                                    {"/api/v1/orgs", api.CreateOrgRequest{Name: "x"}, forbidden},
		"GET /api/v1/orgs":                                     {"/api/v1/orgs", nil, emptyList},
		"GET /api/v1/orgs/{id}":                                {"/api/v1/orgs/" + acme.org.ID, nil, notFound},
		"PATCH /api/v1/orgs/{id}":                              {"/api/v1/orgs/" + acme.org.ID, map[string]any{"retention": "1h"}, notFound},
		"DELETE /api/v1/orgs/{id}":                             {"/api/v1/orgs/" + acme.org.ID, nil, forbidden},
		"PUT /api/v1/orgs/{id}/notifications":                  {"/api/v1/orgs/" + acme.org.ID + "/notifications", api.NotificationsRequest{Topics: []string{"event.dead"}}, notFound},
		"GET /api/v1/orgs/{id}/notifications":                  {"/api/v1/orgs/" + acme.org.ID + "/notifications", nil, notFound},
		"POST /api/v1/connections":                             {"/api/v1/connections", map[string]any{"org_id": acme.org.ID, "provider": testProvider, "name": "x", "secrets": []string{"s"}}, forbidden},
		"GET /api/v1/connections":                              {"/api/v1/connections", nil, emptyList},
		"GET /api/v1/connections/{id}":                         {"/api/v1/connections/" + acme.conn.ID, nil, notFound},
		"PATCH /api/v1/connections/{id}":                       {"/api/v1/connections/" + acme.conn.ID, map[string]any{"filter": "true"}, notFound},
		"POST /api/v1/rules/test":                              {"/api/v1/rules/test", api.RuleTestRequest{Kind: "filter", Source: "true", EventID: ev.ID}, notFound},
		"PUT /api/v1/connections/{id}/secrets":                 {"/api/v1/connections/" + acme.conn.ID + "/secrets", api.SecretsRequest{Secrets: []string{"x"}}, notFound},
		"POST /api/v1/connections/{id}/adopt-handshake-secret": {"/api/v1/connections/" + acme.conn.ID + "/adopt-handshake-secret", api.AdoptSecretRequest{MessageID: msg.ID}, notFound},
		"POST /api/v1/endpoints":                               {"/api/v1/endpoints", api.CreateEndpointRequest{ConnectionID: acme.conn.ID}, notFound},
		"GET /api/v1/endpoints":                                {"/api/v1/endpoints", nil, emptyList},
		"GET /api/v1/endpoints/{id}":                           {"/api/v1/endpoints/" + acme.ep.ID, nil, notFound},
		"PATCH /api/v1/endpoints/{id}":                         {"/api/v1/endpoints/" + acme.ep.ID, map[string]any{"enabled": false}, notFound},
		"POST /api/v1/endpoints/{id}/rotate":                   {"/api/v1/endpoints/" + acme.ep.ID + "/rotate", api.RotateEndpointRequest{Overlap: "0s"}, notFound},
		"GET /api/v1/messages":                                 {"/api/v1/messages?endpoint_id=" + acme.ep.ID, nil, emptyList},
		"GET /api/v1/messages/{id}":                            {"/api/v1/messages/" + msg.ID, nil, notFound},
		"GET /api/v1/messages/{id}/body":                       {"/api/v1/messages/" + msg.ID + "/body", nil, notFound},
		"POST /api/v1/messages/{id}/body-url":                  {"/api/v1/messages/" + msg.ID + "/body-url", nil, notFound},
		"GET /api/v1/events":                                   {"/api/v1/events", nil, emptyList},
		"GET /api/v1/events/{id}":                              {"/api/v1/events/" + ev.ID, nil, notFound},
		"GET /api/v1/event-types":                              {"/api/v1/event-types?connection_id=" + acme.conn.ID, nil, emptyList},
		"GET /api/v1/event-types/{type}":                       {"/api/v1/event-types/test.thing?connection_id=" + acme.conn.ID, nil, notFound},
		"GET /api/v1/asyncapi.json":                            {"/api/v1/asyncapi.json?connection_id=" + acme.conn.ID, nil, notFound},
		"GET /api/v1/events/stream":                            {"/api/v1/events/stream?endpoint_id=" + acme.ep.ID, nil, notFound},
		"GET /api/v1/unclaimed":                                {"/api/v1/unclaimed", nil, forbidden},
		"POST /api/v1/consumers":                               {"/api/v1/consumers", map[string]any{"org_id": acme.org.ID, "name": "x", "app": "x", "url": "http://127.0.0.1:9/", "event_types": []string{"*"}}, forbidden},
		"GET /api/v1/consumers":                                {"/api/v1/consumers", nil, emptyList},
		"GET /api/v1/consumers/{id}":                           {"/api/v1/consumers/" + cons.ID, nil, notFound},
		"POST /api/v1/consumers/{id}/rotate-secret":            {"/api/v1/consumers/" + cons.ID + "/rotate-secret", api.RotateSecretRequest{}, notFound},
		"PATCH /api/v1/consumers/{id}":                         {"/api/v1/consumers/" + cons.ID, map[string]any{"enabled": false}, notFound},
		"POST /api/v1/consumers/{id}/pause":                    {"/api/v1/consumers/" + cons.ID + "/pause", nil, notFound},
		"POST /api/v1/consumers/{id}/resume":                   {"/api/v1/consumers/" + cons.ID + "/resume", nil, notFound},
		"GET /api/v1/consumers/{id}/health":                    {"/api/v1/consumers/" + cons.ID + "/health", nil, notFound},
		"POST /api/v1/consumers/{id}/retry":                    {"/api/v1/consumers/" + cons.ID + "/retry", api.RetryRequest{DryRun: true}, notFound},
		"GET /api/v1/consumers/{id}/stats":                     {"/api/v1/consumers/" + cons.ID + "/stats", nil, notFound},
		"POST /api/v1/events/{id}/retry":                       {"/api/v1/events/" + ev.ID + "/retry", nil, notFound},
		"POST /api/v1/consumers/{id}/test":                     {"/api/v1/consumers/" + cons.ID + "/test", nil, notFound},
		"POST /api/v1/subject-links":                           {"/api/v1/subject-links", map[string]any{"connection_id": acme.conn.ID, "provider_object_id": "o", "app": "a", "record_id": "r"}, notFound},
		"POST /api/v1/messages/{id}/replay":                    {"/api/v1/messages/" + msg.ID + "/replay", nil, notFound},
		"POST /api/v1/messages/replay":                         {"/api/v1/messages/replay", api.ReplayRequest{Match: json.RawMessage(`{}`), Q: "n"}, emptyList},
		"POST /api/v1/endpoints/{id}/replay":                   {"/api/v1/endpoints/" + acme.ep.ID + "/replay", api.ReplayWindowRequest{Since: now.Add(-time.Hour), Until: now.Add(time.Hour)}, notFound},
		"GET /api/v1/replays/{id}":                             {"/api/v1/replays/" + intake.NewID(), nil, notFound},
		"POST /api/v1/events/{id}/reroute":                     {"/api/v1/events/" + ev.ID + "/reroute", nil, notFound},
		"POST /api/v1/events/reroute":                          {"/api/v1/events/reroute", api.RerouteRequest{Q: "test"}, emptyList},
		"GET /api/v1/audit":                                    {"/api/v1/audit", nil, emptyList},
		"GET /api/v1/issues":                                   {"/api/v1/issues?consumer_id=" + cons.ID, nil, emptyList},
		"GET /api/v1/issues/{id}":                              {"/api/v1/issues/" + iss.ID, nil, notFound},
		"PATCH /api/v1/issues/{id}":                            {"/api/v1/issues/" + iss.ID, api.UpdateIssueRequest{Status: "dismissed"}, notFound},
		"POST /api/v1/issues/{id}/retry":                       {"/api/v1/issues/" + iss.ID + "/retry", api.RetryRequest{}, notFound},
		"POST /api/v1/keys":                                    {"/api/v1/keys", api.CreateKeyRequest{OrgID: acme.org.ID}, forbidden},
		"GET /api/v1/keys":                                     {"/api/v1/keys", nil, emptyList},
		"DELETE /api/v1/keys/{id}":                             {"/api/v1/keys/" + acmeKey, nil, notFound},
		"DELETE /api/v1/connections/{id}":                      {"/api/v1/connections/" + acme.conn.ID, nil, notFound},
		"DELETE /api/v1/endpoints/{id}":                        {"/api/v1/endpoints/" + acme.ep.ID, nil, notFound},
		"DELETE /api/v1/consumers/{id}":                        {"/api/v1/consumers/" + cons.ID, nil, notFound},
		"DELETE /api/v1/endpoints/{id}/bodies":                 {"/api/v1/endpoints/" + acme.ep.ID + "/bodies?since=2000-01-01T00:00:00Z&until=2100-01-01T00:00:00Z", nil, notFound},
		"POST /api/v1/apply": {"/api/v1/apply?prune=true", control.Document{Orgs: []control.OrgSpec{{Name: "acme",
			Consumers: []control.ConsumerSpec{{Name: "x", App: "x", URL: "http://127.0.0.1:9/", EventTypes: []string{"*"}}}}}}, forbidden},
		"GET /api/v1/export": {"/api/v1/export?org_id=" + acme.org.ID, nil, notFound},
	}
	routes := api.New(api.Config{Control: control.New(control.Config{Store: e.store, Sealer: e.sealer}), Wakes: e.store}).Routes()
	for _, pattern := range routes {
		c, ok := cases[pattern]
		if !ok {
			t.Errorf("route %s has no cross-org case", pattern)
			continue
		}
		method, _, _ := strings.Cut(pattern, " ")
		rec := e.do(method, c.path, globex.org.APIKey, c.body)
		allowed := false
		for _, w := range c.want {
			allowed = allowed || rec.Code == w
		}
		if !allowed {
			t.Errorf("%s as another org: %d %s", pattern, rec.Code, rec.Body)
		}
		sent, _ := json.Marshal(c.body)
		for what, id := range secrets {
			// A 404 may name the id the caller sent; nothing else of acme's.
			echoed := strings.Contains(c.path, id) || strings.Contains(string(sent), id)
			if !echoed && strings.Contains(rec.Body.String(), id) {
				t.Errorf("%s as another org shows the %s id", pattern, what)
			}
		}
	}
	if len(routes) != len(cases) {
		t.Errorf("%d routes, %d cases", len(routes), len(cases))
	}
	// Nothing of acme's changed.
	ep, _ := e.store.Endpoint(t.Context(), intake.Scope{}, acme.ep.ID)
	c, _ := e.store.Consumer(t.Context(), intake.Scope{}, cons.ID)
	if !ep.Enabled || !c.Enabled {
		t.Fatalf("another org changed acme's rows: endpoint enabled %v, consumer enabled %v", ep.Enabled, c.Enabled)
	}
	if n, err := e.store.NotificationSettings(t.Context(), intake.Scope{}, acme.org.ID); err != nil || n.URL != "http://127.0.0.1:9/notify" ||
		len(n.Topics) != 1 {
		t.Fatalf("another org changed acme's notification settings: %+v %v", n, err)
	}
	if got, _ := e.store.Event(t.Context(), intake.Scope{}, ev.ID); got.State != intake.EventNoConsumer {
		t.Fatalf("another org re-routed acme's event: %s", got.State)
	}
	if n, err := e.store.CountMessages(t.Context(), intake.Scope{OrgID: acme.org.ID}, intake.MessageFilter{}); err != nil || n != 2 {
		t.Fatalf("acme has %d messages (%v), want its two: another org's bulk replay reached them", n, err)
	}
}
