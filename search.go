package intake

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/intakehq/intake/internal/jsonvalue"
)

// Search is what an operator looks for among events or messages (DESIGN
// §13), beside a list's other filters: events whose data contains Match,
// and text that holds every one of Words (an event's data, a message's raw
// body). Its zero value looks for nothing.
type Search struct {
	Match Match
	Words []string
}

// IsZero reports whether s looks for nothing.
func (s Search) IsZero() bool { return s.Match.IsZero() && len(s.Words) == 0 }

// Bounds of what a search may ask, so one request cannot make every row
// expensive to judge.
const (
	// MaxMatchBytes bounds a match as written.
	MaxMatchBytes = 4096
	// MaxMatchDepth bounds how deeply a match nests objects and arrays.
	MaxMatchDepth = 16
	// MaxSearchWords bounds the words of q.
	MaxSearchWords = 10
	// MaxWordBytes bounds one word of q.
	MaxWordBytes = 128
	// SearchedBodyBytes is how much of a message's body q looks at: the
	// first MiB, whatever the body's size.
	SearchedBodyBytes = 1 << 20
)

// Match is a partial JSON object an event's data must contain, judged as
// PostgreSQL judges jsonb @> (Hookdeck-style partial matching; the
// embedded store judges it with a matcher of its own): every key
// of an object must be in the data with a value that contains the match's
// value; an array contains another when each of the other's elements is
// contained in one of its own (order and repeats do not matter); scalars
// are equal when their JSON types are and their values are (numbers by
// value: 1 is 1.0, never "1"). Its zero value matches everything.
type Match struct {
	text string         // compact JSON, as stores are given it
	obj  map[string]any // decoded; numbers are json.Number
}

// ParseMatch reads a match as a person writes it: a JSON object. Anything
// else, a match larger than MaxMatchBytes or nested deeper than
// MaxMatchDepth, a string holding a NUL character or a number out of range
// is EINVALID, with a message that says what to fix.
func ParseMatch(s string) (Match, error) {
	if strings.TrimSpace(s) == "" {
		return Match{}, nil
	}
	if len(s) > MaxMatchBytes {
		return Match{}, Errorf(EINVALID, "match must be at most %d bytes", MaxMatchBytes)
	}
	v, err := decodeJSON([]byte(s))
	if err != nil {
		return Match{}, Errorf(EINVALID, "match must be a JSON object, like {\"customer\":{\"id\":\"cus_1\"}}: %s",
			strings.TrimPrefix(err.Error(), "json: "))
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return Match{}, Errorf(EINVALID, "match must be a JSON object, like {\"customer\":{\"id\":\"cus_1\"}}")
	}
	if err := checkMatchValue(obj, 1); err != nil {
		return Match{}, err
	}
	if len(obj) > 0 && !hasScalar(obj) {
		return Match{}, Errorf(EINVALID, "match must name at least one value, like {\"customer\":{\"id\":\"cus_1\"}}: "+
			"a pattern of empty objects and arrays alone can use no index and would read every event")
	}
	text, err := json.Marshal(obj)
	if err != nil {
		return Match{}, err // every value decoded from JSON encodes again
	}
	return Match{text: string(text), obj: obj}, nil
}

// decodeJSON decodes one JSON value, numbers kept as written.
func decodeJSON(b []byte) (any, error) {
	v, err := jsonvalue.Decode(b)
	if errors.Is(err, jsonvalue.ErrTrailing) {
		return nil, Errorf(EINVALID, "one JSON value only")
	}
	return v, err
}

// checkMatchValue refuses what no store could judge the same way:
// PostgreSQL's jsonb holds neither NUL characters nor numbers beyond its
// numeric range.
func checkMatchValue(v any, depth int) error {
	if depth > MaxMatchDepth {
		return Errorf(EINVALID, "match may nest at most %d levels", MaxMatchDepth)
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, 0) {
				return Errorf(EINVALID, "match keys may not hold NUL characters")
			}
			if err := checkMatchValue(e, depth+1); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := checkMatchValue(e, depth+1); err != nil {
				return err
			}
		}
	case string:
		if strings.ContainsRune(v, 0) {
			return Errorf(EINVALID, "match strings may not hold NUL characters")
		}
	case json.Number:
		if f, err := strconv.ParseFloat(string(v), 64); err != nil || math.IsInf(f, 0) || (f == 0 && hasNonZeroDigit(string(v))) {
			return Errorf(EINVALID, "match number %s is out of range", v)
		}
	}
	return nil
}

// hasScalar reports whether v holds a string, number, boolean or null
// anywhere: a value a search's indexes can look up.
func hasScalar(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			if hasScalar(e) {
				return true
			}
		}
		return false
	case []any:
		return slices.ContainsFunc(v, hasScalar)
	}
	return true
}

func hasNonZeroDigit(s string) bool {
	mant, _, _ := strings.Cut(strings.ToLower(s), "e")
	return strings.ContainsAny(mant, "123456789")
}

// IsZero reports whether m matches everything.
func (m Match) IsZero() bool { return m.text == "" }

// String is m as compact JSON ("" for the zero Match).
func (m Match) String() string { return m.text }

// Strings lists the match's string values (not its keys), each once: text
// an event's data holds wherever it contains m, for a store whose index
// finds text.
func (m Match) Strings() []string {
	seen := map[string]bool{}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case string:
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	walk(m.obj)
	return out
}

// ParseWords splits q into the words a search requires, at white space:
// each must occur in the text searched, in any case and in any order, as a
// word or inside one ("voice" finds "invoice"). At most MaxSearchWords
// words of at most MaxWordBytes each; q must be UTF-8.
func ParseWords(q string) ([]string, error) {
	if !utf8.ValidString(q) {
		return nil, Errorf(EINVALID, "q must be UTF-8 text")
	}
	words := strings.Fields(q)
	if len(words) > MaxSearchWords {
		return nil, Errorf(EINVALID, "q may hold at most %d words", MaxSearchWords)
	}
	for _, w := range words {
		if len(w) > MaxWordBytes {
			return nil, Errorf(EINVALID, "each word of q must be at most %d bytes", MaxWordBytes)
		}
		if strings.ContainsRune(w, 0) {
			return nil, Errorf(EINVALID, "q may not hold NUL characters")
		}
	}
	if len(words) == 0 {
		return nil, nil
	}
	return words, nil
}
