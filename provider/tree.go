package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
)

// Bodies are decoded in place: the tokenizer reads the body where it lies
// (no buffer holding a second copy), and what the decoded values take is
// bounded, so a body shaped to decode into far more memory than it is (a
// long array of one-digit numbers is sixteen times larger decoded) is
// refused rather than taken. The worker charges a body's processing to the
// body memory budget as the body and what it may decode to (worker.BodyCharge).

// TreeFactor is how many times its size a body's decoded values may take,
// beyond treeSlack: past it the body is refused as too complex to
// interpret.
const TreeFactor = 3

// treeSlack is what any body's decoded values may take whatever its size,
// so that small bodies, whose decoded form is several times their text,
// are never refused.
const treeSlack = 1 << 20

// What one decoded value is counted as beyond its text: an interface
// value, a string header, and for an object member its share of the map.
const (
	valueCost  = 32
	memberCost = 48
)

// treeOptions decode as encoding/json does: the last of duplicate names
// wins, and invalid UTF-8 becomes U+FFFD.
var treeOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// ErrTooComplex is the error of a body whose decoded values would take more
// than TreeFactor times its size.
var ErrTooComplex = errors.New("body decodes to more than 3 times its size in memory")

// decodeTree reads body as exactly one JSON value, objects as
// map[string]any, arrays as []any, numbers as json.Number.
func decodeTree(body []byte) (any, error) {
	d := treeDecoder{dec: jsontext.NewDecoder(bytes.NewBuffer(body), treeOptions...), left: TreeFactor*int64(len(body)) + treeSlack}
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

type treeDecoder struct {
	dec  *jsontext.Decoder
	left int64
}

func (d *treeDecoder) take(n int) error {
	if d.left -= int64(n); d.left < 0 {
		return ErrTooComplex
	}
	return nil
}

func (d *treeDecoder) value() (any, error) {
	tok, err := d.dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{':
		m := map[string]any{}
		for d.dec.PeekKind() != '}' {
			name, err := d.dec.ReadToken()
			if err != nil {
				return nil, err
			}
			k := name.String()
			if err := d.take(memberCost + len(k)); err != nil {
				return nil, err
			}
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		_, err = d.dec.ReadToken()
		return m, err
	case '[':
		list := []any{}
		for d.dec.PeekKind() != ']' {
			// An element, and the room it may leave unused as the list
			// grows.
			if err := d.take(2 * 16); err != nil {
				return nil, err
			}
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err = d.dec.ReadToken()
		return list, err
	case '"':
		s := tok.String()
		return s, d.take(valueCost + len(s))
	case '0':
		n := tok.String()
		return json.Number(n), d.take(valueCost + len(n))
	case 't', 'f':
		return tok.Bool(), d.take(valueCost)
	case 'n':
		return nil, d.take(valueCost)
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok.Kind())
}

// topFields reads body as exactly one JSON object and decodes the values of
// the named top-level members only; the others are checked and skipped,
// never decoded, so a large body costs no memory beyond itself.
func topFields(body []byte, names ...string) (map[string]any, error) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(body), treeOptions...)
	tok, err := dec.ReadToken()
	switch {
	case err != nil:
		return nil, err
	case tok.Kind() == 'n':
		return nil, errors.New("null is not an object")
	case tok.Kind() != '{':
		return nil, fmt.Errorf("a JSON %v is not an object", tok.Kind())
	}
	m := map[string]any{}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		k := name.String()
		if !slices.Contains(names, k) {
			if err := dec.SkipValue(); err != nil {
				return nil, err
			}
			continue
		}
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		v, err := decodeTree(raw)
		if err != nil {
			return nil, err
		}
		m[k] = v
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return m, nil
}

// jsonKind names the kind of a decoded value, for errors.
func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	}
	return "value"
}

// members calls fn with the name and the exact bytes of each member of the
// JSON object raw, in order, without decoding the values; raw must be
// valid JSON. It reports whether raw is an object.
func members(raw []byte, fn func(name string, value []byte)) bool {
	dec := jsontext.NewDecoder(bytes.NewBuffer(raw), treeOptions...)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return false
		}
		k := name.String() // a token lasts until the next read
		// The value as it lies in raw: the tokenizer reads raw in place,
		// so this copies nothing.
		v, err := dec.ReadValue()
		if err != nil {
			return false
		}
		end := dec.InputOffset()
		fn(k, raw[end-int64(len(v)):end])
	}
	return true
}
