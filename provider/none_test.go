package provider

import "testing"

func TestNoneAcceptsAnythingUnverified(t *testing.T) {
	r := &Request{Body: []byte("whatever"), ReceivedAt: received}
	if err := adapter(t, "none").Verify(r, nil, nil); err != nil {
		t.Fatalf("Verify = %v, want nil", err)
	}
}

func TestNoneLeavesEventIDEmptyWithoutConfig(t *testing.T) {
	ev := oneEvent(t, adapter(t, "none"), &Request{Body: []byte(`{"id":"x","type":"y"}`)}, nil)
	if ev.ProviderEventID != "" || ev.Type != "none.message" {
		t.Fatalf("got id %q type %q; want no id (body-digest dedup) and none.message", ev.ProviderEventID, ev.Type)
	}
	if string(ev.Data) != `{"id":"x","type":"y"}` {
		t.Errorf("Data = %s", ev.Data)
	}
}

func TestNoneReadsConfiguredIDAndType(t *testing.T) {
	cfg := Config{"id_field": "id", "type_header": "X-Topic"}
	r := &Request{Header: headers("X-Topic", "build.finished"), Body: []byte(`{"id":"b-9"}`)}
	ev := oneEvent(t, adapter(t, "none"), r, cfg)
	if ev.ProviderEventID != "b-9" || ev.Type != "none.build.finished" {
		t.Fatalf("got id %q type %q", ev.ProviderEventID, ev.Type)
	}
}

func TestNoneValidatesIDAndTypeOptions(t *testing.T) {
	a := adapter(t, "none")
	if err := a.ValidateConfig(Config{"id_field": "id", "type_field": "type"}); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
	if err := a.ValidateConfig(Config{"id_field": "id", "id_header": "X-Id"}); err == nil {
		t.Error("both id_field and id_header accepted")
	}
}

func TestNoneEmptyBodyHasNullData(t *testing.T) {
	ev := oneEvent(t, adapter(t, "none"), &Request{}, nil)
	if string(ev.Data) != "null" || ev.DataTruncated {
		t.Fatalf("Data = %s truncated %v", ev.Data, ev.DataTruncated)
	}
}
