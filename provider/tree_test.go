package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// stdDecode is encoding/json's reading of body, numbers kept exact: what
// decodeTree must agree with.
func stdDecode(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

var treeSeeds = []string{
	`{}`, `[]`, `null`, `true`, `"s"`, `1.50e3`, `-0`, `{"a":1,"a":2}`, `{"a":{"b":[1,"x",null,false,{"c":{}}]}}`,
	`{"id":"evt_1","n":12345678901234567890,"f":1.25}`, "{\"bad\":\"\xff\xfe\"}", `{"e":"\u00e9\ud83d\ude00\n\"\\"}`,
	`{"lone":"\ud800"}`, `{"a":1} `, `{"a":1} x`, `{"a":1}{}`, `{"a":}`, `{"a" 1}`, `[1,]`, `{,}`, ``, ` `, `nul`,
	`{"a":1,}`, `"\x01"`, `01`, `[` + strings.Repeat(`[`, 20) + strings.Repeat(`]`, 20) + `]`,
}

// FuzzDecodeTree holds decodeTree to encoding/json: the same value for every
// body both read, an error for every body encoding/json refuses.
func FuzzDecodeTree(f *testing.F) {
	for _, s := range treeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		want, wantErr := stdDecode(body)
		got, err := decodeTree(body)
		switch {
		case errors.Is(err, ErrTooComplex):
			t.Fatalf("%q: refused as too complex", body)
		case (err == nil) != (wantErr == nil):
			t.Fatalf("%q: decodeTree err %v, encoding/json err %v", body, err, wantErr)
		case err == nil && !reflect.DeepEqual(got, want):
			t.Fatalf("%q: decodeTree %#v, encoding/json %#v", body, got, want)
		}
	})
}

func TestDecodeTreeRefusesABodyThatDecodesToFarMoreThanItsSize(t *testing.T) {
	// Two bytes a number in the text, dozens decoded.
	numbers := []byte(`{"a":[` + strings.Repeat(`1,`, 2<<20) + `1]}`)
	members := []byte(`{` + strings.Repeat(`"k":1,`, 1<<20) + `"k":1}`)
	for name, body := range map[string][]byte{"numbers": numbers, "members": members} {
		if _, err := decodeTree(body); !errors.Is(err, ErrTooComplex) {
			t.Errorf("%s (%d bytes): err %v, want ErrTooComplex", name, len(body), err)
		}
	}
	// A large body of long strings decodes to about its size: taken.
	long := []byte(`{"a":"` + strings.Repeat("x", 8<<20) + `","b":[` + strings.Repeat(`"`+strings.Repeat("y", 100)+`",`, 10000) + `"z"]}`)
	if _, err := decodeTree(long); err != nil {
		t.Fatalf("a body of long strings: %v", err)
	}
}

func TestAGenericAdapterReadsItsFieldsWithoutDecodingTheRest(t *testing.T) {
	// id and type found, the rest skipped (it would be refused as too
	// complex if it were decoded), still checked as JSON.
	rest := `"rest":[` + strings.Repeat(`1,`, 2<<20) + `1]`
	body := []byte(`{"kind":"order.paid",` + rest + `,"id":"n1"}`)
	in, err := adapter(t, "none").Interpret(&Request{Method: "POST", Body: body}, Config{"id_field": "id", "type_field": "kind"})
	if err != nil || in.ProviderEventID != "n1" || in.EventType != "none.order.paid" {
		t.Fatalf("Interpret: %+v, %v; want id n1, type none.order.paid", in, err)
	}
	for _, bad := range []string{`{"id":"n1",` + rest + `,}`, `{"id":"n1"} x`, `[{"id":"n1"}]`, `null`} {
		if _, err := adapter(t, "none").Interpret(&Request{Method: "POST", Body: []byte(bad)}, Config{"id_field": "id"}); err == nil {
			t.Errorf("Interpret(%.40q…): no error; want the body refused as not one JSON object", bad)
		}
	}
}

func BenchmarkInterpretLargeBody(b *testing.B) {
	body := []byte(`{"id":"n1","pad":"` + strings.Repeat("<", 64<<20) + `"}`)
	a, _ := Lookup("none")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		in, err := a.Interpret(&Request{Method: "POST", Body: body}, Config{"id_field": "id"})
		if err != nil || in.ProviderEventID != "n1" {
			b.Fatal(err, in.ProviderEventID)
		}
	}
}
