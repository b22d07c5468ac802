// Package jsonvalue decodes one JSON value the way intake compares them:
// numbers kept as written, so 1.0 and 1 and a 20-digit id survive intact.
package jsonvalue

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// ErrTrailing is the error of a document with more than one JSON value.
var ErrTrailing = errors.New("one JSON value only")

// Decode decodes b, which must hold exactly one JSON value; numbers are
// json.Number.
func Decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, ErrTrailing
	}
	return v, nil
}
