package catalog

import (
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
}

// Decide turns what was observed into the catalog's updates, given the
// stored schema state of the types (states; a type missing there is new).
// Each sample's schema is compared with the schema of everything before it
// (the stored one, then the samples before it in this flush): each
// difference is a change, the sample its example. The first event of a
// type is no drift: it makes the schema. An update is Learnt (its schema
// is written) when the schema changed; its example is then the last sample
// that changed it, and a type with changes leaves one schema.changed
// notice. Samples that are not JSON are skipped.
func Decide(states map[intake.EventTypeKey]intake.EventType, observed []Observed, now time.Time) []intake.EventTypeUpdate {
	out := make([]intake.EventTypeUpdate, 0, len(observed))
	for _, o := range observed {
		up := intake.EventTypeUpdate{OrgID: o.OrgID, EventTypeKey: o.Key, Count: o.Count, First: o.First, Last: o.Last, Hours: o.Hours}
		st := states[o.Key]
		up.Version = st.Version
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
