package intake_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// containment lists data, a match and whether the data contains it, as
// PostgreSQL 15 answers `data::jsonb @> match::jsonb` for each (checked by
// hand on a server, and again by the stores' conformance suite).
var containment = []struct {
	data, match string
	want        bool
}{
	{`{"customer":{"id":"cus_1","email":"a@b.c"},"amount":5}`, `{"customer":{"id":"cus_1"}}`, true},
	{`{"customer":{"id":"cus_1"}}`, `{"customer":{"id":"cus_2"}}`, false},
	{`{"customer":{"id":"cus_1"}}`, `{"customer":{"id":"cus_1","name":"x"}}`, false},
	{`{"a":{"b":1},"z":0}`, `{"a":{},"z":0}`, true},
	{`{"a":1}`, `{}`, true},
	{`{"a":[1,2]}`, `{"a":1}`, false},
	{`{"a":[1,2]}`, `{"a":[1]}`, true},
	{`{"a":[1,2]}`, `{"a":[2,1,1]}`, true},
	{`{"a":[1,2]}`, `{"a":[3]}`, false},
	{`{"a":[1],"z":0}`, `{"a":[],"z":0}`, true},
	{`{"a":1,"z":0}`, `{"a":[],"z":0}`, false},
	{`{"a":{"b":1},"z":0}`, `{"a":[],"z":0}`, false},
	{`{"a":[[1,2],3]}`, `{"a":[[2]]}`, true},
	{`{"a":[[1,2],3]}`, `{"a":[2]}`, false},
	{`{"a":[[1]]}`, `{"a":[1]}`, false},
	{`{"a":[1,[2]],"z":0}`, `{"a":[[]],"z":0}`, true},
	{`{"a":[{"x":1,"y":2},{"x":3}]}`, `{"a":[{"x":1}]}`, true},
	{`{"a":[{"x":1},{"y":2}]}`, `{"a":[{"x":1,"y":2}]}`, false},
	{`{"a":[{"b":[1,2]}]}`, `{"a":[{"b":[2]}]}`, true},
	{`{"a":[{"b":1}],"z":0}`, `{"a":[{}],"z":0}`, true},
	{`{"a":[1],"z":0}`, `{"a":[{}],"z":0}`, false},
	{`{"a":1}`, `{"a":1.0}`, true},
	{`{"a":1e2}`, `{"a":100}`, true},
	{`{"a":0.01}`, `{"a":1e-2}`, true},
	{`{"a":-0}`, `{"a":0}`, true},
	{`{"a":1}`, `{"a":"1"}`, false},
	{`{"a":"1"}`, `{"a":1}`, false},
	{`{"a":1}`, `{"a":-1}`, false},
	{`{"a":true}`, `{"a":true}`, true},
	{`{"a":"true"}`, `{"a":true}`, false},
	{`{"a":1}`, `{"a":true}`, false},
	{`{"a":null}`, `{"a":null}`, true},
	{`{"b":1}`, `{"a":null}`, false},
	{`{"a":"A"}`, `{"a":"a"}`, false},
	{`{"k":"v","k":"w"}`, `{"k":"w"}`, true}, // the last of repeated keys counts, as in jsonb
	{`[{"a":1}]`, `{"a":1}`, false},
	{`"a"`, `{}`, false},
}

func TestMatchJudgesContainmentAsJSONBDoes(t *testing.T) {
	for _, c := range containment {
		m, err := intake.ParseMatch(c.match)
		if err != nil {
			t.Fatalf("ParseMatch(%s): %v", c.match, err)
		}
		if got := m.In([]byte(c.data)); got != c.want {
			t.Errorf("%s contains %s: %v, want %v", c.data, c.match, got, c.want)
		}
	}
}

func TestMatchRefusesAPatternNoIndexCanLookUp(t *testing.T) {
	for _, bad := range []string{`{"x":[]}`, `{"x":{}}`, `{"x":[[],{}],"y":{"z":[]}}`} {
		_, err := intake.ParseMatch(bad)
		if intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(err.Error(), "would read every event") {
			t.Errorf("ParseMatch(%s): %v, want EINVALID saying it would read every event", bad, err)
		}
	}
	for _, good := range []string{`{}`, `{"x":[null]}`, `{"x":{"y":0}}`, `{"x":[],"y":false}`} {
		if _, err := intake.ParseMatch(good); err != nil {
			t.Errorf("ParseMatch(%s): %v", good, err)
		}
	}
}

func TestMatchRefusesWhatIsNotAJudgeableObject(t *testing.T) {
	for _, bad := range []string{
		`[1]`, `"x"`, `1`, `{"a":`, `{"a":1} {"b":2}`, `{'a':1}`,
		`{"a":"x\u0000y"}`, `{"a\u0000":1}`, `{"a":1e999999}`, `{"a":1e-999999}`,
		`{"a":` + strings.Repeat(`{"b":`, intake.MaxMatchDepth) + `1` + strings.Repeat(`}`, intake.MaxMatchDepth) + `}`,
		`{"a":"` + strings.Repeat("x", intake.MaxMatchBytes) + `"}`,
	} {
		_, err := intake.ParseMatch(bad)
		if intake.ErrorCode(err) != intake.EINVALID {
			t.Errorf("ParseMatch(%.40s…) = %v, want invalid", bad, err)
		}
	}
	m, err := intake.ParseMatch("  ")
	if err != nil || !m.IsZero() || !m.In([]byte(`[]`)) {
		t.Fatalf("an empty match: %+v %v", m, err)
	}
}

func TestMatchIsKeptAsCompactJSONWithItsNumbersAsWritten(t *testing.T) {
	m, err := intake.ParseMatch(` { "b" : [ 1.50 , "x" ] , "a" : { "c" : 12345678901234567890123 } } `)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.String(); got != `{"a":{"c":12345678901234567890123},"b":[1.50,"x"]}` {
		t.Fatalf("String() = %s", got)
	}
	if !m.In([]byte(`{"a":{"c":12345678901234567890123.0},"b":["x",1.5,2]}`)) {
		t.Fatal("the match is not in data holding the same values")
	}
	if m.In([]byte(`{"a":{"c":12345678901234567890124},"b":["x",1.5]}`)) {
		t.Fatal("numbers that differ in their last digit are equal")
	}
}

func TestMatchNamesTheStringValuesItRequires(t *testing.T) {
	m, err := intake.ParseMatch(`{"customer":{"id":"cus_1","vip":true,"note":null},"tags":["a","cus_1"],"amount":5}`)
	if err != nil {
		t.Fatal(err)
	}
	strs := m.Strings()
	slices.Sort(strs)
	if !slices.Equal(strs, []string{"a", "cus_1"}) {
		t.Fatalf("Strings() = %q, want each string value once, never a key", strs)
	}
}

func TestWordsAreSplitAtSpacesAndBounded(t *testing.T) {
	w, err := intake.ParseWords("  refund\tcus_1  Failed ")
	if err != nil || !slices.Equal(w, []string{"refund", "cus_1", "Failed"}) {
		t.Fatalf("ParseWords = %q %v", w, err)
	}
	if w, err := intake.ParseWords(" "); err != nil || w != nil {
		t.Fatalf("blank q = %q %v", w, err)
	}
	for _, bad := range []string{strings.Repeat("w ", intake.MaxSearchWords+1), strings.Repeat("x", intake.MaxWordBytes+1), "a\x00b", "\xff"} {
		if _, err := intake.ParseWords(bad); intake.ErrorCode(err) != intake.EINVALID {
			t.Errorf("ParseWords(%.20q) = %v, want invalid", bad, err)
		}
	}
}
