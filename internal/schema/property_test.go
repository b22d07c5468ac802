package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"pgregory.net/rapid"
)

// strings mixes values of every format with near misses and plain text.
var strings_ = []string{
	"2026-11-30T12:00:00Z", "2026-11-30T12:00:00.5-07:00", "2026-11-30", "2026-13-01T00:00:00Z",
	"0193c5d2-7a1e-7b3c-9d4e-0123456789ab", "0193c5d2-7a1e-7b3c-9d4e",
	"ann@example.com", "b.c+d@mail.example.org", "@example.com", "a@b",
	"https://example.com/x?y=1#z", "http://a.example/%41", "ftp://h.example/f", "https://x/%4", "urn:isbn:123",
	"", "x", "cus_123", "hello world",
}

func jsonValue(depth int) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		kinds := 5
		if depth > 0 {
			kinds = 7
		}
		switch rapid.IntRange(0, kinds-1).Draw(t, "kind") {
		case 0:
			return nil
		case 1:
			return rapid.Bool().Draw(t, "bool")
		case 2:
			return json.Number(fmt.Sprint(rapid.IntRange(-1000, 1000).Draw(t, "int")))
		case 3:
			return json.Number(fmt.Sprint(rapid.Float64Range(-1e6, 1e6).Draw(t, "float")))
		case 4:
			if rapid.Bool().Draw(t, "known") {
				return rapid.SampledFrom(strings_).Draw(t, "string")
			}
			return rapid.String().Draw(t, "string")
		case 5:
			return rapid.SliceOfN(jsonValue(depth-1), 0, 4).Draw(t, "array")
		default:
			keys := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"a", "b", "c", "id", "x.y", "it's"}), 0, 4, rapid.ID[string]).Draw(t, "keys")
			m := map[string]any{}
			for _, k := range keys {
				m[k] = jsonValue(depth-1).Draw(t, k)
			}
			return m
		}
	})
}

func encode(t *rapid.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func inferAll(t *rapid.T, values []any) *Node {
	var n *Node
	for _, v := range values {
		s, err := Infer(encode(t, v))
		if err != nil {
			t.Fatal(err)
		}
		n = Merge(n, s)
	}
	return n
}

// validator compiles a document with formats asserted, as a strict
// consumer of the schema would.
func validator(t *rapid.T, doc []byte) *jsonschema.Schema {
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("inferred.json", parsed); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("inferred.json")
	if err != nil {
		t.Fatalf("the inferred document does not compile: %v\n%s", err, doc)
	}
	return s
}

func TestEveryValueSeenValidatesAgainstTheInferredSchema(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		values := rapid.SliceOfN(jsonValue(3), 1, 6).Draw(t, "values")
		doc := Document(inferAll(t, values))
		s := validator(t, doc)
		for _, v := range values {
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(encode(t, v)))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(inst); err != nil {
				t.Fatalf("%s does not validate against\n%s\n%v", encode(t, v), doc, err)
			}
		}
	})
}

func TestMergeIsOrderFreeAndIdempotent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := inferAll(t, rapid.SliceOfN(jsonValue(3), 1, 3).Draw(t, "a"))
		b := inferAll(t, rapid.SliceOfN(jsonValue(3), 1, 3).Draw(t, "b"))
		c := inferAll(t, rapid.SliceOfN(jsonValue(3), 1, 3).Draw(t, "c"))
		if ab, ba := Merge(a, b), Merge(b, a); !Equal(ab, ba) {
			t.Fatalf("a+b %s\nb+a %s", mustJSON(ab), mustJSON(ba))
		}
		if l, r := Merge(Merge(a, b), c), Merge(a, Merge(b, c)); !Equal(l, r) {
			t.Fatalf("(a+b)+c %s\na+(b+c) %s", mustJSON(l), mustJSON(r))
		}
		if aa := Merge(a, a); !Equal(aa, a) {
			t.Fatalf("a+a %s\na %s", mustJSON(aa), mustJSON(a))
		}
		before := mustJSON(a)
		Merge(a, b)
		if mustJSON(a) != before {
			t.Fatal("Merge changed its argument")
		}
	})
}

func TestAShapeAlreadySeenIsNoDriftAndADriftIsRecordedOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seen := rapid.SliceOfN(jsonValue(3), 1, 5).Draw(t, "seen")
		base := inferAll(t, seen)
		for _, v := range seen {
			if d := Diff(base, inferAll(t, []any{v})); len(d) != 0 {
				t.Fatalf("%s was seen, yet differs from %s: %+v", encode(t, v), mustJSON(base), d)
			}
		}
		next := inferAll(t, []any{jsonValue(3).Draw(t, "next")})
		changes := Diff(base, next)
		merged := Merge(base, next)
		if len(changes) > 0 && Equal(merged, base) {
			t.Fatalf("changes %+v left the schema as it was", changes)
		}
		if again := Diff(merged, next); len(again) != 0 {
			t.Fatalf("the same shape drifted twice: %+v", again)
		}
	})
}

func TestADocumentParsesBackToTheSameSchema(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := inferAll(t, rapid.SliceOfN(jsonValue(3), 1, 4).Draw(t, "values"))
		back, err := Parse(Document(n))
		if err != nil {
			t.Fatal(err)
		}
		if !Equal(back, n) {
			t.Fatalf("parsed back\n got %s\nwant %s", mustJSON(back), mustJSON(n))
		}
	})
}
