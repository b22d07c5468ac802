package provider

import (
	"net/url"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// Notifications shaped like the examples of
// https://learn.microsoft.com/graph/change-notifications-delivery-webhooks;
// the clientState is the connection's secret.
const (
	graphClientState = "secretClientValue"
	graphBody        = `{"value":[` +
		`{"id":"lsgTZMr9KwAAA","subscriptionId":"7f105c7d-2dc5-4530-97cd-4e7ae6534c07","subscriptionExpirationDateTime":"2016-03-19T22:11:09.952Z",` +
		`"clientState":"secretClientValue","changeType":"created","resource":"users/{user_guid}@{tenant_guid}/messages/{long_id_string}",` +
		`"tenantId":"84bd8158-6d4d-4958-8b9f-9d6445542f95","resourceData":{"@odata.type":"#Microsoft.Graph.Message",` +
		`"@odata.id":"Users/{user_guid}@{tenant_guid}/Messages/{long_id_string}","@odata.etag":"W/\"CQAAABYAAADkrWGo7bouTKlsgTZMr9KwAAAUWRHf\"","id":"{long_id_string}"}},` +
		`{"subscriptionId":"7f105c7d-2dc5-4530-97cd-4e7ae6534c07","subscriptionExpirationDateTime":"2016-03-19T22:11:09.952Z",` +
		`"clientState":"secretClientValue","lifecycleEvent":"reauthorizationRequired","tenantId":"84bd8158-6d4d-4958-8b9f-9d6445542f95"}]}`
)

func TestMSGraphAnswersValidationToken(t *testing.T) {
	a := adapter(t, "msgraph")
	token := "Validation: Testing client application reachability for subscription Request-Id: 25bb8b69-f7a4-4f52-8a06-8e6a01d3ab1b"
	r := post("")
	r.Query = url.Values{"validationToken": {token}}
	r.URL = fuzzURL + "?validationToken=" + url.QueryEscape(token)
	c, ok := a.(Challenger).Challenge(r, nil, nil)
	if !ok || c.Status != 200 || c.ContentType != "text/plain" || string(c.Body) != token {
		t.Fatalf("Challenge = %+v, %v", c, ok)
	}
	wantVerified(t, a.Verify(r, nil, nil))
	in, err := a.Interpret(r, nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 {
		t.Fatalf("Interpret = %+v, %v; want a handshake with no events", in, err)
	}
}

func TestMSGraphAcceptsMatchingClientState(t *testing.T) {
	wantVerified(t, adapter(t, "msgraph").Verify(post(graphBody), secrets("previousClientState", graphClientState), nil))
}

func TestMSGraphRejects(t *testing.T) {
	oneWrong := strings.Replace(graphBody, `"clientState":"secretClientValue","lifecycleEvent"`, `"clientState":"guess","lifecycleEvent"`, 1)
	noState := strings.ReplaceAll(graphBody, `"clientState":"secretClientValue",`, "")
	wantAllRejected(t, "msgraph", nil, []rejectCase{
		{"wrong clientState", post(graphBody), secrets("otherValue")},
		{"one notification with a wrong clientState", post(oneWrong), secrets(graphClientState)},
		{"no clientState", post(noState), secrets(graphClientState)},
		{"no secrets", post(graphBody), nil},
		{"empty batch", post(`{"value":[]}`), secrets(graphClientState)},
		{"not JSON", post(`value`), secrets(graphClientState)},
	})
}

func TestMSGraphSplitsNotificationsAndHidesClientState(t *testing.T) {
	in, err := adapter(t, "msgraph").Interpret(post(graphBody), nil)
	if err != nil || len(in.Events) != 2 {
		t.Fatalf("Interpret = %+v, %v; want two events", in, err)
	}
	change, life := in.Events[0], in.Events[1]
	if change.Type != "msgraph.message.created" || change.Kind != intake.KindChangeNotice || change.ProviderEventID != "" {
		t.Errorf("change: type %q kind %q id %q", change.Type, change.Kind, change.ProviderEventID)
	}
	if !equalStrings(change.ObjectIDs, []string{"{long_id_string}", "7f105c7d-2dc5-4530-97cd-4e7ae6534c07"}) {
		t.Errorf("change objects %v", change.ObjectIDs)
	}
	if life.Type != "msgraph.lifecycle.reauthorizationRequired" || life.Kind != intake.KindEvent ||
		life.ProviderEventID != "lifecycle:7f105c7d-2dc5-4530-97cd-4e7ae6534c07:reauthorizationRequired:2016-03-19T22:11:09.952Z" {
		t.Errorf("lifecycle: type %q kind %q id %q", life.Type, life.Kind, life.ProviderEventID)
	}
	for _, ev := range in.Events {
		if strings.Contains(string(ev.Data), graphClientState) {
			t.Errorf("event data carries the clientState: %s", ev.Data)
		}
	}
	if in.ProviderEventID != "" || in.Kind != intake.KindEvent {
		t.Errorf("message id %q kind %q", in.ProviderEventID, in.Kind)
	}
}

func TestMSGraphBasicNotificationsAloneAreNeverDeduplicated(t *testing.T) {
	body := `{"value":[{"subscriptionId":"s","clientState":"secretClientValue","changeType":"updated","resource":"me/events/1"}]}`
	in, err := adapter(t, "msgraph").Interpret(post(body), nil)
	if err != nil || in.Kind != intake.KindChangeNotice || in.ProviderEventID != "" || in.EventType != "msgraph.updated" {
		t.Fatalf("Interpret = %+v, %v", in, err)
	}
	rich := `{"value":[{"subscriptionId":"s","clientState":"secretClientValue","changeType":"created","resource":"teams/1/channels/2/messages/3",` +
		`"resourceData":{"id":"3","@odata.type":"#microsoft.graph.chatMessage"},"encryptedContent":{"data":"…","dataKey":"…"}}]}`
	in, err = adapter(t, "msgraph").Interpret(post(rich), nil)
	if err != nil || in.Events[0].Kind != intake.KindEvent || in.Events[0].Type != "msgraph.chatmessage.created" {
		t.Fatalf("rich notification: %+v, %v", in, err)
	}
}
