package sqlite

import (
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
		m, err := parseJSONMatch(c.match)
		if err != nil {
			t.Fatalf("parseJSONMatch(%s): %v", c.match, err)
		}
		if got := m.in([]byte(c.data)); got != c.want {
			t.Errorf("%s contains %s: %v, want %v", c.data, c.match, got, c.want)
		}
	}
}

func TestAnEmptyMatchIsInEverything(t *testing.T) {
	m, err := parseJSONMatch("  ")
	if err != nil || !m.in([]byte(`[]`)) {
		t.Fatalf("an empty match: %+v %v", m, err)
	}
}

func TestMatchJudgesNumbersByValueAsWritten(t *testing.T) {
	m, err := parseJSONMatch(` { "b" : [ 1.50 , "x" ] , "a" : { "c" : 12345678901234567890123 } } `)
	if err != nil {
		t.Fatal(err)
	}
	if !m.in([]byte(`{"a":{"c":12345678901234567890123.0},"b":["x",1.5,2]}`)) {
		t.Fatal("the match is not in data holding the same values")
	}
	if m.in([]byte(`{"a":{"c":12345678901234567890124},"b":["x",1.5]}`)) {
		t.Fatal("numbers that differ in their last digit are equal")
	}
}

func TestAMatchIntakeContainsIsGivenIsReadAsParseMatchReadsIt(t *testing.T) {
	if _, err := parseJSONMatch(`[1]`); intake.ErrorCode(err) != intake.EINVALID {
		t.Fatalf("a match that is no object: %v, want invalid", err)
	}
}
