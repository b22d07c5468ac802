package intake_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

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
	if err != nil || !m.IsZero() {
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
