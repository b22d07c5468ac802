package provider

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Event Grid signs nothing, so its vectors are the shapes Microsoft's
// documentation shows: the validation event and the answer it wants
// (https://learn.microsoft.com/azure/event-grid/webhook-event-delivery),
// a Blob Storage event in the Event Grid schema and as a CloudEvent
// (https://learn.microsoft.com/azure/event-grid/event-schema-blob-storage).
const (
	egValidationBody = `[{
  "id": "2d1781af-3a4c-4d7c-bd0c-e34b19da4e66",
  "topic": "/subscriptions/xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx",
  "subject": "",
  "data": {
    "validationCode": "512d38b6-c7b8-40c8-89fe-f46f9e9622b6",
    "validationUrl": "https://rp-eastus2.eventgrid.azure.net:553/eventsubscriptions/myeventsub/validate?id=0000000000-0000-0000-0000-00000000000000&t=2022-10-28T04:23:35.1981776Z&apiVersion=2018-05-01-preview&token=1A1A1A1A"
  },
  "eventType": "Microsoft.EventGrid.SubscriptionValidationEvent",
  "eventTime": "2022-10-28T04:23:35.1981776Z",
  "metadataVersion": "1",
  "dataVersion": "1"
}]`
	egBlobBody = `[{
  "topic": "/subscriptions/{subscription-id}/resourceGroups/Storage/providers/Microsoft.Storage/storageAccounts/my-storage-account",
  "subject": "/blobServices/default/containers/test-container/blobs/new-file.txt",
  "eventType": "Microsoft.Storage.BlobCreated",
  "eventTime": "2017-06-26T18:41:00.9584103Z",
  "id": "831e1650-001e-001b-66ab-eeb76e069631",
  "data": {"api": "PutBlockList", "contentType": "text/plain", "contentLength": 524288, "blobType": "BlockBlob",
    "url": "https://my-storage-account.blob.core.windows.net/testcontainer/new-file.txt", "sequencer": "00000000000004420000000000028963"},
  "dataVersion": "",
  "metadataVersion": "1"
},{
  "topic": "/subscriptions/{subscription-id}/resourceGroups/Storage/providers/Microsoft.Storage/storageAccounts/my-storage-account",
  "subject": "/blobServices/default/containers/test-container/blobs/old-file.txt",
  "eventType": "Microsoft.Storage.BlobDeleted",
  "eventTime": "2017-11-07T20:09:22.5674003Z",
  "id": "6b4a5d6e-701e-0049-4d2d-2d4b5e06c0d5",
  "data": {"api": "DeleteBlob"},
  "dataVersion": "",
  "metadataVersion": "1"
}]`
	egCloudEventBody = `{
  "specversion": "1.0",
  "type": "Microsoft.Storage.BlobCreated",
  "source": "/subscriptions/{subscription-id}/resourceGroups/{resource-group}/providers/Microsoft.Storage/storageAccounts/{storage-account}",
  "id": "9aeb0fdf-c01e-0131-0922-9eb54906e209",
  "time": "2019-11-18T15:13:39.4589254Z",
  "subject": "blobServices/default/containers/{storage-container}/blobs/{new-file}",
  "dataschema": "#",
  "data": {"api": "PutBlockList"}
}`
	egSecret = "eg-shared-secret"
)

// egRequest is a request to the endpoint URL with the given query.
func egRequest(method, query, body string, kv ...string) *Request {
	r := post(body, kv...)
	r.Method = method
	r.Query, _ = url.ParseQuery(query)
	r.URL = fuzzURL + "?" + query
	return r
}

func TestAzureEventGridVerifiesTheSecretInTheQueryOrAHeader(t *testing.T) {
	a := adapter(t, "azure_eventgrid")
	wantVerified(t, a.Verify(egRequest("POST", "code="+egSecret, egBlobBody, "aeg-event-type", "Notification"), secrets("old", egSecret), nil))
	wantVerified(t, a.Verify(egRequest("POST", "", egBlobBody, "Authorization", "Bearer "+egSecret), secrets(egSecret), nil))
	wantVerified(t, a.Verify(egRequest("POST", "", egBlobBody, "Authorization", egSecret), secrets(egSecret), nil))
	cfg := Config{"query_param": "key", "header": "X-Hook-Secret"}
	wantVerified(t, a.Verify(egRequest("POST", "key="+egSecret, egBlobBody), secrets(egSecret), cfg))
	wantVerified(t, a.Verify(egRequest("POST", "", egBlobBody, "X-Hook-Secret", egSecret), secrets(egSecret), cfg))
	wantAllRejected(t, "azure_eventgrid", nil, []rejectCase{
		{"secret changed by one byte", egRequest("POST", "code=eg-shared-secreT", egBlobBody), secrets(egSecret)},
		{"wrong secret", egRequest("POST", "code="+egSecret, egBlobBody), secrets("another-secret")},
		{"no secret sent", egRequest("POST", "", egBlobBody), secrets(egSecret)},
		{"other parameter", egRequest("POST", "key="+egSecret, egBlobBody), secrets(egSecret)},
		{"no secrets", egRequest("POST", "code="+egSecret, egBlobBody), nil},
		{"empty secret", egRequest("POST", "code=", egBlobBody, "Authorization", "Bearer "), secrets("")},
	})
}

func TestAzureEventGridAnswersTheValidationOnlyWithTheSecret(t *testing.T) {
	a := adapter(t, "azure_eventgrid").(Challenger)
	r := egRequest("POST", "code="+egSecret, egValidationBody, "aeg-event-type", "SubscriptionValidation")
	ans, ok := a.Challenge(r, secrets(egSecret), nil)
	if !ok || ans.Status != http.StatusOK || string(ans.Body) != `{"validationResponse":"512d38b6-c7b8-40c8-89fe-f46f9e9622b6"}` {
		t.Fatalf("Challenge = %+v %s, %v", ans, ans.Body, ok)
	}
	in, err := adapter(t, "azure_eventgrid").Interpret(r, nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 || in.EventType != "azure_eventgrid.subscription_validation" {
		t.Fatalf("Interpret = %+v, %v", in, err)
	}
	forged := egRequest("POST", "code=guess", egValidationBody, "aeg-event-type", "SubscriptionValidation")
	if ans, ok := a.Challenge(forged, secrets(egSecret), nil); !ok || ans.Status != http.StatusUnauthorized || strings.Contains(string(ans.Body), "512d38b6") {
		t.Fatalf("a validation without the secret was answered %+v %s", ans, ans.Body)
	}
	if _, ok := a.Challenge(egRequest("POST", "code="+egSecret, egBlobBody), secrets(egSecret), nil); ok {
		t.Fatal("a delivery was answered as a handshake")
	}
}

func TestAzureEventGridAnswersTheCloudEventsAbuseCheck(t *testing.T) {
	a := adapter(t, "azure_eventgrid").(Challenger)
	r := egRequest("OPTIONS", "code="+egSecret, "", "WebHook-Request-Origin", "eventgrid.azure.net", "WebHook-Request-Rate", "120")
	ans, ok := a.Challenge(r, secrets(egSecret), nil)
	if !ok || ans.Status != http.StatusOK || ans.Header.Get("WebHook-Allowed-Origin") != "eventgrid.azure.net" {
		t.Fatalf("Challenge = %+v, %v", ans, ok)
	}
	in, err := adapter(t, "azure_eventgrid").Interpret(r, nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 {
		t.Fatalf("Interpret = %+v, %v", in, err)
	}
	r.Query = nil
	if ans, ok := a.Challenge(r, secrets(egSecret), nil); !ok || ans.Status != http.StatusUnauthorized || ans.Header.Get("WebHook-Allowed-Origin") != "" {
		t.Fatalf("an abuse check without the secret was answered %+v", ans)
	}
}

func TestAnEventGridValidationIsNotAnsweredByAnotherProvidersConnection(t *testing.T) {
	for _, name := range Names() {
		if name == "azure_eventgrid" {
			continue
		}
		ch, ok := adapter(t, name).(Challenger)
		if !ok {
			continue
		}
		c := fuzzCaseFor(name)
		r := egRequest("POST", "code="+egSecret, egValidationBody, "aeg-event-type", "SubscriptionValidation")
		if ans, ok := ch.Challenge(r, append(c.secrets, []byte(egSecret)), c.cfg); ok && strings.Contains(string(ans.Body), "512d38b6") {
			t.Errorf("%s answered an Event Grid validation: %d %s", name, ans.Status, ans.Body)
		}
	}
}

func TestAzureEventGridMakesOneEventPerItem(t *testing.T) {
	a := adapter(t, "azure_eventgrid")
	in, err := a.Interpret(egRequest("POST", "code="+egSecret, egBlobBody), nil)
	if err != nil || len(in.Events) != 2 || in.EventType != "azure_eventgrid.batch" {
		t.Fatalf("Interpret = %+v, %v", in, err)
	}
	ev := in.Events[0]
	if ev.ProviderEventID != "831e1650-001e-001b-66ab-eeb76e069631" || ev.Type != "azure_eventgrid.Microsoft.Storage.BlobCreated" {
		t.Errorf("event 0: id %q type %q", ev.ProviderEventID, ev.Type)
	}
	if !ev.OccurredAt.Equal(time.Date(2017, 6, 26, 18, 41, 0, 958410300, time.UTC)) ||
		!equalStrings(ev.ObjectIDs, []string{"/blobServices/default/containers/test-container/blobs/new-file.txt", "/subscriptions/{subscription-id}/resourceGroups/Storage/providers/Microsoft.Storage/storageAccounts/my-storage-account"}) {
		t.Errorf("event 0: OccurredAt %v ObjectIDs %v", ev.OccurredAt, ev.ObjectIDs)
	}
	if in.Events[1].Type != "azure_eventgrid.Microsoft.Storage.BlobDeleted" || in.Events[1].ProviderEventID != "6b4a5d6e-701e-0049-4d2d-2d4b5e06c0d5" {
		t.Errorf("event 1: %+v", in.Events[1])
	}
}

func TestAzureEventGridReadsCloudEvents(t *testing.T) {
	a := adapter(t, "azure_eventgrid")
	ev := oneEvent(t, a, egRequest("POST", "code="+egSecret, egCloudEventBody, "Content-Type", "application/cloudevents+json"), nil)
	if ev.ProviderEventID != "9aeb0fdf-c01e-0131-0922-9eb54906e209" || ev.Type != "azure_eventgrid.Microsoft.Storage.BlobCreated" ||
		!ev.OccurredAt.Equal(time.Date(2019, 11, 18, 15, 13, 39, 458925400, time.UTC)) {
		t.Fatalf("structured: %+v", ev)
	}
	in, err := a.Interpret(egRequest("POST", "", "["+egCloudEventBody+","+strings.Replace(egCloudEventBody, "9aeb", "0000", 1)+"]"), nil)
	if err != nil || len(in.Events) != 2 || in.Events[1].ProviderEventID != "00000fdf-c01e-0131-0922-9eb54906e209" {
		t.Fatalf("batch: %+v, %v", in, err)
	}
	bin := oneEvent(t, a, egRequest("POST", "", `{"api":"PutBlockList"}`, "ce-id", "b-1", "ce-type", "Microsoft.Storage.BlobCreated",
		"ce-source", "/subscriptions/s", "ce-time", "2019-11-18T15:13:39Z", "ce-specversion", "1.0"), nil)
	if bin.ProviderEventID != "b-1" || bin.Type != "azure_eventgrid.Microsoft.Storage.BlobCreated" || string(bin.Data) != `{"api":"PutBlockList"}` {
		t.Fatalf("binary: %+v", bin)
	}
}

func TestAzureEventGridPassesABatchOfTenThousandAndOneItemsToTheLimit(t *testing.T) {
	// The worker refuses more than MaxEventsPerMessage events as
	// too_many_events; the adapter must not hide them.
	item := `{"id":"831e1650-001e-001b-66ab-eeb76e069631","eventType":"Microsoft.Storage.BlobCreated",` +
		`"subject":"/blobServices/default/containers/test-container/blobs/new-file.txt",` +
		`"data":{"url":"https://my-storage-account.blob.core.windows.net/testcontainer/new-file.txt"}}`
	body := "[" + strings.TrimSuffix(strings.Repeat(item+",", 10001), ",") + "]"
	in, err := adapter(t, "azure_eventgrid").Interpret(egRequest("POST", "", body), nil)
	if err != nil || len(in.Events) != 10001 {
		t.Fatalf("Interpret: %d events, %v", len(in.Events), err)
	}
}

func TestAzureEventGridRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", "[]", `[{"id":"1"}]`, `{"specversion":"1.0","id":"1"}`, `[1]`} {
		_, err := adapter(t, "azure_eventgrid").Interpret(egRequest("POST", "", body), nil)
		wantPermanent(t, err)
	}
}

func TestAzureEventGridConfigIsChecked(t *testing.T) {
	for _, cfg := range []Config{{"query_param": 1}, {"header": true}} {
		if err := adapter(t, "azure_eventgrid").ValidateConfig(cfg); err == nil {
			t.Errorf("ValidateConfig(%v) accepted", cfg)
		}
	}
}
