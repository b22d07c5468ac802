package catalog

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/schema"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

var key = intake.EventTypeKey{ConnectionID: "0193c5d2-7a1e-7b3c-9d4e-0123456789ab", Type: "stripe.invoice.paid"}

func samples(data ...string) []Sample {
	out := make([]Sample, len(data))
	for i, d := range data {
		out[i] = Sample{EventID: "evt_" + string(rune('a'+i)), At: t0.Add(time.Duration(i) * time.Second), Data: []byte(d)}
	}
	return out
}

func stored(t *testing.T, version int64, data ...string) map[intake.EventTypeKey]intake.EventType {
	t.Helper()
	var n *schema.Node
	for _, d := range data {
		s, err := schema.Infer([]byte(d))
		if err != nil {
			t.Fatal(err)
		}
		n = schema.Merge(n, s)
	}
	return map[intake.EventTypeKey]intake.EventType{key: {Schema: schema.Document(n), Version: version}}
}

type change struct{ path, kind, from, to, event string }

func changesOf(up intake.EventTypeUpdate) []change {
	var out []change
	for _, c := range up.Changes {
		out = append(out, change{c.Path, c.Change, strings.Join(c.From, ","), strings.Join(c.To, ","), c.ExampleEventID})
	}
	return out
}

func TestDecideLearnsRecordsDriftAndNotices(t *testing.T) {
	cases := []struct {
		name        string
		states      map[intake.EventTypeKey]intake.EventType
		samples     []Sample
		learnt      bool
		example     string
		wantChanges []change
	}{
		{name: "the first event of a type makes its schema and is no drift",
			samples: samples(`{"id":"in_1","amount":100}`), learnt: true, example: "evt_a"},
		{name: "the same shape again changes nothing",
			states: stored(t, 3, `{"id":"in_1","amount":100}`), samples: samples(`{"id":"in_2","amount":5}`)},
		{name: "a new field is drift; its event is the example",
			states:  stored(t, 3, `{"id":"in_1","amount":100}`),
			samples: samples(`{"id":"in_2","amount":5}`, `{"id":"in_3","amount":5,"currency":"eur"}`),
			learnt:  true, example: "evt_b", wantChanges: []change{{"$.currency", "added", "", "string", "evt_b"}}},
		{name: "a field every event had, gone, and a type changed",
			states:  stored(t, 1, `{"id":"in_1","amount":100}`),
			samples: samples(`{"amount":"100"}`),
			learnt:  true, example: "evt_a",
			wantChanges: []change{{"$.amount", "type_changed", "integer", "string", "evt_a"}, {"$.id", "removed", "string", "", "evt_a"}}},
		{name: "within one flush, a sample is compared with the ones before it",
			samples: samples(`{"a":1}`, `{"a":1,"b":2}`, `{"a":1,"b":3}`),
			learnt:  true, example: "evt_b", wantChanges: []change{{"$.b", "added", "", "integer", "evt_b"}}},
		{name: "a sample that is not JSON is skipped",
			states: stored(t, 2, `{"a":1}`), samples: samples(`{"a":`)},
		{name: "a format only loosened is learnt without a change",
			states:  stored(t, 2, `{"at":"2026-11-30T12:00:00Z"}`),
			samples: samples(`{"at":"yesterday"}`), learnt: true, example: "evt_a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := Observed{OrgID: "org", Key: key, Count: int64(len(tc.samples)) + 10, First: t0, Last: t0.Add(time.Minute),
				Hours: map[time.Time]int64{t0: int64(len(tc.samples)) + 10}, Samples: tc.samples}
			ups := Decide(tc.states, []Observed{o}, t0.Add(time.Hour))
			if len(ups) != 1 {
				t.Fatalf("%d updates, want 1", len(ups))
			}
			up := ups[0]
			if up.Count != o.Count || !up.First.Equal(o.First) || !up.Last.Equal(o.Last) || up.Hours[t0] != o.Count || up.OrgID != "org" || up.EventTypeKey != key {
				t.Fatalf("counts %+v, want those observed", up)
			}
			if up.Version != tc.states[key].Version {
				t.Fatalf("version %d, want the one read, %d", up.Version, tc.states[key].Version)
			}
			if up.Learnt != tc.learnt || up.ExampleEventID != tc.example {
				t.Fatalf("learnt %v example %q, want %v %q", up.Learnt, up.ExampleEventID, tc.learnt, tc.example)
			}
			if got := changesOf(up); !slices.Equal(got, tc.wantChanges) {
				t.Fatalf("changes\n got %+v\nwant %+v", got, tc.wantChanges)
			}
			if len(tc.wantChanges) == 0 {
				if len(up.Notices) != 0 {
					t.Fatalf("notices %+v without a change", up.Notices)
				}
			} else if len(up.Notices) != 1 || up.Notices[0].Topic != intake.NoticeSchemaChanged ||
				up.Notices[0].Subject != key.ConnectionID+"/"+key.Type || up.Notices[0].OrgID != "org" ||
				!strings.Contains(up.Notices[0].Detail, tc.wantChanges[0].path) {
				t.Fatalf("notices %+v", up.Notices)
			}
			if up.Learnt {
				var doc map[string]any
				if err := json.Unmarshal(up.Schema, &doc); err != nil || doc["$schema"] != schema.Dialect {
					t.Fatalf("schema %s: %v", up.Schema, err)
				}
				if ex := tc.samples[up.ExampleEventID[4]-'a']; string(up.Example) != string(ex.Data) {
					t.Fatalf("example %s, want its event's data %s", up.Example, ex.Data)
				}
			}
		})
	}
}

func TestANoticeSpellsOutAtMostTenChanges(t *testing.T) {
	var wide strings.Builder
	wide.WriteString(`{"a":1`)
	for i := range 15 {
		wide.WriteString(`,"f` + string(rune('a'+i)) + `":1`)
	}
	wide.WriteString(`}`)
	ups := Decide(stored(t, 1, `{"a":1}`), []Observed{{OrgID: "org", Key: key, Samples: samples(wide.String())}}, t0)
	if len(ups[0].Changes) != 15 || !strings.HasSuffix(ups[0].Notices[0].Detail, "; and 5 more") {
		t.Fatalf("%d changes, notice %q", len(ups[0].Changes), ups[0].Notices[0].Detail)
	}
}
