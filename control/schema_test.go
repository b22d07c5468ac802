package control_test

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/intakehq/intake/control"
)

const schemaPath = "../docs/intake.schema.json"

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("intake.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("intake.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// yamlInstance reads YAML as the JSON value the schema judges.
func yamlInstance(t *testing.T, src []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// examples are the configuration files the repository shows: the example
// file and the README's.
func examples(t *testing.T) map[string][]byte {
	t.Helper()
	file, err := os.ReadFile("../docs/intake.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "## Configuration as code")
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(section)
	if !ok || m == nil {
		t.Fatal("README has no YAML example under \"## Configuration as code\"")
	}
	return map[string][]byte{"docs/intake.example.yaml": file, "README.md": []byte(m[1])}
}

func TestExampleFilesValidateAgainstTheSchemaAndDecodeIntoTheDocument(t *testing.T) {
	s := compileSchema(t)
	for name, src := range examples(t) {
		if err := s.Validate(yamlInstance(t, src)); err != nil {
			t.Errorf("%s does not validate: %v", name, err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(src))
		dec.KnownFields(true)
		var doc control.Document
		if err := dec.Decode(&doc); err != nil || len(doc.Orgs) == 0 {
			t.Errorf("%s does not decode into a Document: %v", name, err)
		}
	}
}

func TestSchemaRefusesWhatTheServerRefuses(t *testing.T) {
	s := compileSchema(t)
	for name, src := range map[string]string{
		"unknown field":     "orgs: [{name: acme, colour: red}]",
		"consumer no types": "orgs: [{name: acme, consumers: [{name: b, app: b, url: 'https://x.example', event_types: []}]}]",
		"endpoint no name":  "orgs: [{name: acme, connections: [{name: c, provider: github, endpoints: [{enabled: true}]}]}]",
		"negative rate":     "orgs: [{name: acme, connections: [{name: c, provider: github, endpoints: [{name: e, rate_per_sec: -1}]}]}]",
		"no orgs":           "{}",
	} {
		if err := s.Validate(yamlInstance(t, []byte(src))); err == nil {
			t.Errorf("%s: the schema accepts %s", name, src)
		}
	}
}

// TestSchemaAndDocumentTypeAgree: every field of the Go document is in the
// schema, every property of the schema is a field, and the schema requires
// exactly the fields the Go type always writes.
func TestSchemaAndDocumentTypeAgree(t *testing.T) {
	raw, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	type object struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	var schema struct {
		object
		Defs map[string]object `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	types := map[reflect.Type]object{
		reflect.TypeFor[control.Document]():          schema.object,
		reflect.TypeFor[control.OrgSpec]():           schema.Defs["org"],
		reflect.TypeFor[control.ConnectionSpec]():    schema.Defs["connection"],
		reflect.TypeFor[control.EndpointSpec]():      schema.Defs["endpoint"],
		reflect.TypeFor[control.ConsumerSpec]():      schema.Defs["consumer"],
		reflect.TypeFor[control.NotificationsSpec](): schema.Defs["notifications"],
	}
	for typ, obj := range types {
		if len(obj.Properties) == 0 {
			t.Errorf("%s: no object in the schema", typ.Name())
			continue
		}
		var fields, required []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if y, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); y != name {
				t.Errorf("%s.%s: json %q but yaml %q", typ.Name(), f.Name, name, y)
			}
			fields = append(fields, name)
			if opts != "omitempty" {
				required = append(required, name)
			}
			if _, ok := obj.Properties[name]; !ok {
				t.Errorf("%s.%s (%s) is not in the schema", typ.Name(), f.Name, name)
			}
			elem := f.Type
			for elem.Kind() == reflect.Slice || elem.Kind() == reflect.Pointer {
				elem = elem.Elem()
			}
			if elem.Kind() == reflect.Struct {
				if _, ok := types[elem]; !ok {
					t.Errorf("%s.%s: %s is not checked against the schema", typ.Name(), f.Name, elem.Name())
				}
			}
		}
		for p := range obj.Properties {
			if !slices.Contains(fields, p) {
				t.Errorf("the schema's %s property %q is no field of %s", typ.Name(), p, typ.Name())
			}
		}
		slices.Sort(required)
		got := slices.Clone(obj.Required)
		slices.Sort(got)
		if !slices.Equal(required, got) {
			t.Errorf("%s: the schema requires %v, the type always writes %v", typ.Name(), got, required)
		}
	}
}

// TestReadmeShowsEveryPartOfAnOrgAndDeniesNone: the README's configuration
// section may not tell a reader that a part of the file the schema holds is
// missing.
func TestReadmeShowsEveryPartOfAnOrgAndDeniesNone(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "## Configuration as code")
	section, _, _ = strings.Cut(section, "\n## ")
	raw, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	for prop := range schema.Defs["org"].Properties {
		if prop == "body_retention" || prop == "retention" {
			continue // shown under "Retention"
		}
		if !strings.Contains(section, prop+":") {
			t.Errorf("README's example org has no %s", prop)
		}
		title := strings.ToUpper(prop[:1]) + prop[1:]
		for _, denial := range []string{title + " are not part of the file", title + " is not part of the file"} {
			if strings.Contains(section, denial) {
				t.Errorf("README says %q, but the schema holds an org's %s", denial, prop)
			}
		}
	}
}
