package sqlite

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/jsonvalue"
)

// jsonMatch is an intake.Match as intake_contains judges rows by it:
// PostgreSQL has jsonb @>, SQLite has nothing like it, so the embedded
// store judges containment here, as PostgreSQL would.
type jsonMatch struct {
	text string // the match as the statement gave it
	obj  any    // decoded, numbers as json.Number; nil for the zero Match
}

// parseJSONMatch reads the match a statement passes to intake_contains,
// refusing what intake.ParseMatch refuses.
func parseJSONMatch(text string) (*jsonMatch, error) {
	m, err := intake.ParseMatch(text)
	if err != nil {
		return nil, err
	}
	jm := &jsonMatch{text: text}
	if !m.IsZero() {
		if jm.obj, err = jsonvalue.Decode([]byte(m.String())); err != nil {
			return nil, err
		}
	}
	return jm, nil
}

// in reports whether data (a JSON document) contains m. Data that is not
// JSON contains nothing; everything contains the zero Match.
func (m *jsonMatch) in(data []byte) bool {
	if m.obj == nil {
		return true
	}
	v, err := jsonvalue.Decode(data)
	return err == nil && contains(v, m.obj)
}

// contains is jsonb's @>: whether have contains want.
func contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok || !contains(hv, wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return false
		}
		for _, wv := range w {
			found := false
			for _, hv := range h {
				if contains(hv, wv) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	case json.Number:
		h, ok := have.(json.Number)
		return ok && sameNumber(string(h), string(w))
	default: // string, bool, nil
		return have == want
	}
}

// sameNumber compares two JSON numbers by value, exactly (1, 1.0, 1e0 and
// 10e-1 are one number), without building numbers of any size.
func sameNumber(a, b string) bool {
	if a == b {
		return true
	}
	na, da, ea, oka := decimal(a)
	nb, db, eb, okb := decimal(b)
	return oka && okb && na == nb && da == db && ea == eb
}

// decimal writes a JSON number as sign, significant digits and the power
// of ten of its last digit: "-12.50" is (true, "125", -1). Zero is
// (false, "", 0) whatever its sign. ok is false for an exponent beyond
// int32, which no store holds.
func decimal(s string) (neg bool, digits string, exp int64, ok bool) {
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	mant, e, hasExp := strings.Cut(strings.ToLower(s), "e")
	if hasExp {
		var err error
		if exp, err = strconv.ParseInt(strings.TrimPrefix(e, "+"), 10, 32); err != nil {
			return false, "", 0, false
		}
	}
	whole, frac, _ := strings.Cut(mant, ".")
	digits = whole + frac
	exp -= int64(len(frac))
	digits = strings.TrimLeft(digits, "0")
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	if trimmed == "" {
		return false, "", 0, true
	}
	return neg, trimmed, exp, true
}
