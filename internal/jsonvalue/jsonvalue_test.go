package jsonvalue

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestDecodeKeepsNumbersAsWrittenAndRefusesASecondValue(t *testing.T) {
	v, err := Decode([]byte(`{"id": 12345678901234567890, "n": 1.0}`))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if m["id"] != json.Number("12345678901234567890") || m["n"] != json.Number("1.0") {
		t.Errorf("numbers decoded as %#v and %#v, want them as written", m["id"], m["n"])
	}
	if _, err := Decode([]byte(`{} {}`)); !errors.Is(err, ErrTrailing) {
		t.Errorf("two values: %v, want ErrTrailing", err)
	}
	if _, err := Decode([]byte(`{`)); err == nil {
		t.Error("a document cut short decoded")
	}
}
