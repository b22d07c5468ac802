package inbox_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/inbox"
)

// The inbox keeps its own copy of the envelope so that applications import
// it alone. A field renamed, added or dropped on one side and not the other
// fails here rather than in an application, as an event that decodes with
// a field quietly empty.
func TestTheInboxReadsEveryFieldOfTheEnvelopeIntakeSends(t *testing.T) {
	sameWireFields(t, "Envelope", reflect.TypeFor[intake.Envelope](), reflect.TypeFor[inbox.Envelope]())
}

// sameWireFields reports every field of sent and read that the other does
// not have under the same JSON name, Go name and kind of value, comparing
// nested structs (a subject) field by field.
func sameWireFields(t *testing.T, path string, sent, read reflect.Type) {
	t.Helper()
	sentFields, readFields := wireFields(sent), wireFields(read)
	if len(sentFields) == 0 {
		t.Fatalf("%s: intake sends no fields", path)
	}
	for name, s := range sentFields {
		r, ok := readFields[name]
		switch {
		case !ok:
			t.Errorf("%s: intake sends %q (%s), which the inbox does not read", path, name, s.Name)
		case s.Name != r.Name:
			t.Errorf("%s: %q is %s in intake and %s in the inbox", path, name, s.Name, r.Name)
		default:
			sameValue(t, path+"."+s.Name, s.Type, r.Type)
		}
	}
	for name, r := range readFields {
		if _, ok := sentFields[name]; !ok {
			t.Errorf("%s: the inbox reads %q (%s), which intake does not send", path, name, r.Name)
		}
	}
}

func sameValue(t *testing.T, path string, sent, read reflect.Type) {
	t.Helper()
	switch {
	case sent == read:
	case sent.Kind() == reflect.Pointer && read.Kind() == reflect.Pointer:
		sameValue(t, path, sent.Elem(), read.Elem())
	case sent.Kind() == reflect.Struct && read.Kind() == reflect.Struct:
		sameWireFields(t, path, sent, read)
	case sent.Kind() != read.Kind():
		t.Errorf("%s: intake sends a %s, the inbox reads a %s", path, sent, read)
	}
}

// wireFields are a struct's fields by their JSON names.
func wireFields(typ reflect.Type) map[string]reflect.StructField {
	fields := map[string]reflect.StructField{}
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case !f.IsExported() || name == "-":
			continue
		case name == "":
			name = f.Name
		}
		fields[name] = f
	}
	return fields
}
