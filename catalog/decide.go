package catalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/schema"
)

// Observed is what a learner saw of one event type between two flushes:
// the events to count and the samples of their data, oldest first.
type Observed struct {
	OrgID       string
	Key         intake.EventTypeKey
	Count       int64
	First, Last time.Time
	Hours       map[time.Time]int64
	Samples     []Sample
	// Folded is how many types past its connection's bound Bound counted
	// under this one, its connection's EventTypeOther: nothing is learnt
	// from their samples.
	Folded int
}

// Bound keeps each connection's catalog within limit types (DESIGN §26).
// An observed type already catalogued (in states) is recorded as it is; a
// new one while its connection has room, in key order; past that, its
// events count under the connection's EventTypeOther type, whose Folded
// says so, and only one of their samples is kept, the example of an other
// type new to the catalog. catalogued is how many types each connection
// has (EventTypeOther among them, and then in states). A limit of 0 or
// less bounds nothing.
func Bound(states map[intake.EventTypeKey]intake.EventType, catalogued map[string]int, observed []Observed, limit int) []Observed {
	if limit <= 0 {
		return observed
	}
	out := make([]Observed, 0, len(observed))
	room := map[string]int{}
	others := map[string]*Observed{}
	var order []string // the connections with an other type, as first met
	for _, o := range observed {
		conn := o.Key.ConnectionID
		if _, known := states[o.Key]; known && o.Key.Type != intake.EventTypeOther {
			out = append(out, o)
			continue
		}
		if o.Key.Type != intake.EventTypeOther {
			if _, ok := room[conn]; !ok {
				room[conn] = limit - catalogued[conn]
				if _, ok := states[intake.EventTypeKey{ConnectionID: conn, Type: intake.EventTypeOther}]; ok {
					room[conn]++
				}
			}
			if room[conn] > 0 {
				room[conn]--
				out = append(out, o)
				continue
			}
		}
		other := others[conn]
		if other == nil {
			other = &Observed{OrgID: o.OrgID, Key: intake.EventTypeKey{ConnectionID: conn, Type: intake.EventTypeOther},
				First: o.First, Last: o.Last, Hours: map[time.Time]int64{}}
			others[conn] = other
			order = append(order, conn)
		}
		other.Count += o.Count
		if o.First.Before(other.First) {
			other.First = o.First
		}
		if o.Last.After(other.Last) {
			other.Last = o.Last
		}
		for h, n := range o.Hours {
			other.Hours[h] += n
		}
		other.Samples = append(other.Samples, o.Samples...)
		if o.Key.Type != intake.EventTypeOther {
			other.Folded++
		}
	}
	for _, conn := range order {
		other := others[conn]
		if other.Folded > 0 {
			other.Samples = firstJSON(other.Samples)
		}
		out = append(out, *other)
	}
	return out
}

// firstJSON keeps the first sample whose data is JSON, if any.
func firstJSON(samples []Sample) []Sample {
	for _, s := range samples {
		if json.Valid(s.Data) {
			return []Sample{s}
		}
	}
	return nil
}

// otherSchema is the schema of an EventTypeOther type that counts the
// types past its connection's bound: the empty schema, any value, as
// nothing is learnt from them.
var otherSchema = schema.Document(&schema.Node{})

// Decide turns what was observed into the catalog's updates, given the
// stored schema state of the types (states; a type missing there is new).
// Each sample's schema is compared with the schema of everything before it
// (the stored one, then the samples before it in this flush): each
// difference is a change, the sample its example. The first event of a
// type is no drift: it makes the schema. An update is Learnt (its schema
// is written) when the schema changed; its example is then the last sample
// that changed it, and a type with changes leaves one schema.changed
// notice. Samples that are not JSON are skipped.
//
// An other type that counts types past its connection's bound (Folded)
// learns nothing; when it is new to the catalog, it is written with the
// empty schema and its sample as the example, and leaves the one notice
// saying the connection's catalog is full: written over version 0, so of
// two processes that fill it at once only one leaves it.
func Decide(states map[intake.EventTypeKey]intake.EventType, observed []Observed, now time.Time) []intake.EventTypeUpdate {
	out := make([]intake.EventTypeUpdate, 0, len(observed))
	for _, o := range observed {
		up := intake.EventTypeUpdate{OrgID: o.OrgID, EventTypeKey: o.Key, Count: o.Count, First: o.First, Last: o.Last, Hours: o.Hours}
		st, known := states[o.Key]
		up.Version = st.Version
		if o.Folded > 0 {
			if !known {
				up.Learnt, up.Schema, up.Example = true, otherSchema, json.RawMessage("null")
				if len(o.Samples) > 0 {
					up.Example, up.ExampleEventID = o.Samples[0].Data, o.Samples[0].EventID
				}
				up.Notices = []intake.Notice{{ID: intake.NewID(), OrgID: o.OrgID, Topic: intake.NoticeSchemaChanged,
					Subject: o.Key.ConnectionID + "/" + o.Key.Type, At: now,
					Detail: fmt.Sprintf("the connection's event-type catalog is full: %d new types, and any after them, are counted under %q, with no schema learnt from them", o.Folded, o.Key.Type)}}
			}
			out = append(out, up)
			continue
		}
		base, err := schema.Parse(st.Schema)
		if err != nil {
			base = nil // unreadable: learnt afresh from this flush
		}
		merged := base
		var example *Sample
		for i := range o.Samples {
			s := &o.Samples[i]
			n, err := schema.Infer(s.Data)
			if err != nil {
				continue
			}
			for _, c := range schema.Diff(merged, n) {
				up.Changes = append(up.Changes, intake.EventTypeChange{ID: intake.NewID(), OrgID: o.OrgID, ConnectionID: o.Key.ConnectionID,
					Type: o.Key.Type, At: s.At, Path: c.Path, Change: c.Kind, From: names(c.From), To: names(c.To), ExampleEventID: s.EventID})
			}
			next := schema.Merge(merged, n)
			if merged == nil || !schema.Equal(next, merged) {
				example = s
			}
			merged = next
		}
		if example != nil { // a sample changed the schema (merging only adds)
			up.Learnt = true
			up.Schema = schema.Document(merged)
			up.Example, up.ExampleEventID = example.Data, example.EventID
		}
		if len(up.Changes) > 0 {
			up.Notices = []intake.Notice{{ID: intake.NewID(), OrgID: o.OrgID, Topic: intake.NoticeSchemaChanged,
				Subject: o.Key.ConnectionID + "/" + o.Key.Type, Detail: detail(o.Key.Type, up.Changes), At: now}}
		}
		out = append(out, up)
	}
	return out
}

// names are a change's types as JSON Schema names them (nil for none).
func names(t schema.Type) []string {
	if t == 0 {
		return nil
	}
	return t.Names()
}

// maxDetailChanges bounds the changes a notice spells out.
const maxDetailChanges = 10

// detail says what changed, for a person reading the notification.
func detail(typ string, cs []intake.EventTypeChange) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s changed shape: ", typ)
	for i, c := range cs {
		if i == maxDetailChanges {
			fmt.Fprintf(&b, "; and %d more", len(cs)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(Describe(c))
	}
	return b.String()
}

// Describe says one change in words: "$.amount added (string)",
// "$.amount type changed from integer to string".
func Describe(c intake.EventTypeChange) string {
	switch c.Change {
	case intake.ChangeAdded:
		return fmt.Sprintf("%s added (%s)", c.Path, strings.Join(c.To, ", "))
	case intake.ChangeRemoved:
		return fmt.Sprintf("%s removed (was %s)", c.Path, strings.Join(c.From, ", "))
	}
	return fmt.Sprintf("%s type changed from %s to %s", c.Path, strings.Join(c.From, ", "), strings.Join(c.To, ", "))
}
