package schema

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

func mustInfer(t *testing.T, values ...string) *Node {
	t.Helper()
	var n *Node
	for _, v := range values {
		s, err := Infer([]byte(v))
		if err != nil {
			t.Fatalf("Infer(%s): %v", v, err)
		}
		n = Merge(n, s)
	}
	return n
}

func TestInferAndMergeWriteTheSchemaOfEveryValueSeen(t *testing.T) {
	cases := []struct {
		name   string
		values []string
		want   string
	}{
		{"scalars", []string{`"x"`}, `{"type":"string"}`},
		{"an integer", []string{`42`}, `{"type":"integer"}`},
		{"integers and fractions are numbers", []string{`1`, `1.5`}, `{"type":"number"}`},
		{"a string or null", []string{`"a"`, `null`}, `{"type":["null","string"]}`},
		{"an object's keys, all required",
			[]string{`{"id":"evt_1","amount":100,"paid":true}`},
			`{"type":"object","properties":{"amount":{"type":"integer"},"id":{"type":"string"},"paid":{"type":"boolean"}},"required":["amount","id","paid"]}`},
		{"required are the keys every object had",
			[]string{`{"a":1,"b":2}`, `{"a":3,"c":"x"}`},
			`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"string"}},"required":["a"]}`},
		{"nested objects",
			[]string{`{"customer":{"email":"ann@example.com","id":"cus_1"}}`, `{"customer":{"email":"bob@example.org","id":"cus_2"}}`},
			`{"type":"object","properties":{"customer":{"type":"object","properties":{"email":{"type":"string","format":"email"},"id":{"type":"string"}},"required":["email","id"]}},"required":["customer"]}`},
		{"arrays merge their items",
			[]string{`[{"sku":"a","qty":1},{"sku":"b"}]`},
			`{"type":"array","items":{"type":"object","properties":{"qty":{"type":"integer"},"sku":{"type":"string"}},"required":["sku"]}}`},
		{"an empty array has no items yet", []string{`[]`}, `{"type":"array"}`},
		{"formats every string had",
			[]string{`{"at":"2026-11-30T12:00:00Z","id":"0193c5d2-7a1e-7b3c-9d4e-0123456789ab","url":"https://example.com/x?y=1"}`,
				`{"at":"2026-12-01T08:30:00.5+01:00","id":"0193c5d2-7a1e-7b3c-9d4e-0123456789ac","url":"http://a.example/"}`},
			`{"type":"object","properties":{"at":{"type":"string","format":"date-time"},"id":{"type":"string","format":"uuid"},"url":{"type":"string","format":"uri"}},"required":["at","id","url"]}`},
		{"a format one string lacked is dropped", []string{`"2026-11-30T12:00:00Z"`, `"yesterday"`}, `{"type":"string"}`},
		{"a format survives values of other types", []string{`"ann@example.com"`, `null`}, `{"type":["null","string"],"format":"email"}`},
		{"an object that was a string keeps its properties",
			[]string{`"x"`, `{"a":1}`}, `{"type":["string","object"],"properties":{"a":{"type":"integer"}},"required":["a"]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(mustInfer(t, tc.values...))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("schema\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestAnObjectWithTooManyKeysBecomesAMapOfItsValues(t *testing.T) {
	obj := map[string]int{}
	for i := range MaxProperties + 1 {
		obj["k"+string(rune('a'+i%26))+string(rune('a'+i/26))] = i
	}
	b, _ := json.Marshal(map[string]any{"by_id": obj})
	got, _ := json.Marshal(mustInfer(t, string(b), `{"by_id":{"x":"s"}}`))
	want := `{"type":"object","properties":{"by_id":{"type":"object","additionalProperties":{"type":["integer","string"]}}},"required":["by_id"]}`
	if string(got) != want {
		t.Fatalf("schema\n got %s\nwant %s", got, want)
	}
}

func TestValuesDeeperThanMaxDepthAreAccepted(t *testing.T) {
	v := `1`
	for range MaxDepth + 3 {
		v = `{"a":` + v + `}`
	}
	n := mustInfer(t, v)
	depth := 0
	for ; n.Types != 0; n = n.Properties["a"] {
		depth++
	}
	if depth != MaxDepth {
		t.Fatalf("followed %d levels, want %d", depth, MaxDepth)
	}
}

func TestADocumentDeclaresItsDialectAndParsesBack(t *testing.T) {
	n := mustInfer(t, `{"a":[{"b":"2026-11-30T12:00:00Z"}],"c":null}`, `{"a":[],"c":"x","d":1.5}`)
	doc := Document(n)
	var top map[string]any
	if err := json.Unmarshal(doc, &top); err != nil || top["$schema"] != Dialect {
		t.Fatalf("document %s: %v", doc, err)
	}
	back, err := Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !Equal(back, n) {
		t.Fatalf("parsed back\n got %s\nwant %s", mustJSON(back), mustJSON(n))
	}
	if n, err := Parse(nil); n != nil || err != nil {
		t.Fatalf("Parse(nil) = %v, %v", n, err)
	}
	if _, err := Parse([]byte(`{"type":"date"}`)); err == nil {
		t.Fatal("an unknown type parsed")
	}
}

func mustJSON(n *Node) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestDiffNamesEachChangeOfShape(t *testing.T) {
	cases := []struct {
		name   string
		before []string
		value  string
		want   []Change
	}{
		{"nothing seen: no drift", nil, `{"a":1}`, nil},
		{"the same shape", []string{`{"a":1,"b":"x"}`}, `{"a":2,"b":"y"}`, nil},
		{"an optional field absent again", []string{`{"a":1,"b":1}`, `{"a":1}`}, `{"a":1}`, nil},
		{"a new field", []string{`{"a":1}`}, `{"a":1,"b":{"c":true}}`,
			[]Change{{Path: "$.b", Kind: Added, To: Object}}},
		{"a field every value had is gone", []string{`{"a":1,"b":"x"}`, `{"a":2,"b":"y"}`}, `{"a":3}`,
			[]Change{{Path: "$.b", Kind: Removed, From: String}}},
		{"a type never seen there", []string{`{"amount":100}`}, `{"amount":"100"}`,
			[]Change{{Path: "$.amount", Kind: TypeChanged, From: Integer, To: String}}},
		{"an integer where numbers were is no change", []string{`{"n":1.5}`}, `{"n":2}`, nil},
		{"a fraction where integers were is", []string{`{"n":1}`}, `{"n":2.5}`,
			[]Change{{Path: "$.n", Kind: TypeChanged, From: Integer, To: Number}}},
		{"null where a string was", []string{`{"s":"x"}`}, `{"s":null}`,
			[]Change{{Path: "$.s", Kind: TypeChanged, From: String, To: Null}}},
		{"deep in arrays", []string{`{"lines":[{"sku":"a","qty":1}]}`}, `{"lines":[{"sku":"b","qty":"2","note":"x"}]}`,
			[]Change{{Path: "$.lines[*].note", Kind: Added, To: String}, {Path: "$.lines[*].qty", Kind: TypeChanged, From: Integer, To: String}}},
		{"an empty array says nothing of its items", []string{`{"l":[1]}`}, `{"l":[]}`, nil},
		{"odd names are quoted", []string{`{"a.b":1}`}, `{"it's":1}`,
			[]Change{{Path: `$['a.b']`, Kind: Removed, From: Integer}, {Path: `$['it\'s']`, Kind: Added, To: Integer}}},
		{"a format lost is no change", []string{`{"at":"2026-11-30T12:00:00Z"}`}, `{"at":"now"}`, nil},
		{"the whole value's type", []string{`{"a":1}`}, `[1]`,
			[]Change{{Path: "$", Kind: TypeChanged, From: Object, To: Array}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var base *Node
			if tc.before != nil {
				base = mustInfer(t, tc.before...)
			}
			sample := mustInfer(t, tc.value)
			got := Diff(base, sample)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Diff\n got %+v\nwant %+v", got, tc.want)
			}
			if after := Diff(Merge(base, sample), sample); len(after) != 0 {
				t.Fatalf("after merging, the same value still differs: %+v", after)
			}
		})
	}
}

func TestFormatOfNamesOnlyWhatItIsSureOf(t *testing.T) {
	cases := map[string]string{
		"2026-11-30T12:00:00Z":                 FormatDateTime,
		"2026-11-30T12:00:00.123456+05:30":     FormatDateTime,
		"2026-11-30 12:00:00Z":                 "",
		"2026-02-30T12:00:00Z":                 "",
		"2026-11-30":                           "",
		"0193c5d2-7a1e-7b3c-9d4e-0123456789ab": FormatUUID,
		"0193c5d2-7a1e-7b3c-9d4e-0123456789a":  "",
		"ann.lee+tag@mail.example.com":         FormatEmail,
		"ann@localhost":                        "",
		"ann lee@example.com":                  "",
		"https://example.com/a/b?c=d#e":        FormatURI,
		"https://example.com/%zz":              "",
		"https://exa mple.com/":                "",
		"example.com/path":                     "",
		"mailto:ann@example.com":               "",
		"":                                     "",
		"cus_123":                              "",
	}
	for s, want := range cases {
		if got := FormatOf(s); got != want {
			t.Errorf("FormatOf(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestInferRefusesWhatIsNotOneJSONValue(t *testing.T) {
	for _, in := range []string{``, `{`, `1 2`, `{"a":1} x`} {
		if _, err := Infer([]byte(in)); err == nil {
			t.Errorf("Infer(%q) succeeded", in)
		}
	}
}

func TestFieldsListASchemaAsATree(t *testing.T) {
	n := mustInfer(t, `{"id":"0193c5d2-7a1e-7b3c-9d4e-0123456789ab","lines":[{"sku":"a"}],"note":null}`, `{"id":"0193c5d2-7a1e-7b3c-9d4e-0123456789ac","lines":[]}`)
	var got []string
	for _, f := range Fields(n) {
		got = append(got, fmt.Sprintf("%d %s %s %v %v %s", f.Depth, f.Path, f.Name, f.Types, f.Required, f.Format))
	}
	want := []string{
		"0 $ $ [object] true ",
		"1 $.id id [string] true uuid",
		"1 $.lines lines [array] true ",
		"2 $.lines[*] [*] [object] false ",
		"3 $.lines[*].sku sku [string] true ",
		"1 $.note note [null] false ",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("fields\n got %q\nwant %q", got, want)
	}
}
