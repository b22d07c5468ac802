package provider

import (
	"crypto/sha256"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/intakehq/intake"
)

// Providers that sign with keys of their own (aws_sns, google_pubsub) let
// the operator pin the keys in config, or fetch them while verifying. What
// they parse and fetch is kept, bounded, so a message costs no parsing of
// its connection's keys and no fetch of keys already read.

// keyClock is the clock the fetch budgets are judged by. Tests set it;
// nothing else does.
var keyClock intake.Clock = intake.SystemClock{}

// pinnedEntries bounds each cache of parsed pinned keys: a connection's
// keys take one entry however many messages it verifies.
const pinnedEntries = 256

// pemCache keeps what pinned PEM texts parse to, by the text's SHA-256,
// the least recently used dropped past its size. A text that does not
// parse is not kept. What it returns is shared: callers only read it.
type pemCache[T any] struct{ parsed *lru.Cache[[32]byte, T] }

func newPEMCache[T any](size int) pemCache[T] {
	c, err := lru.New[[32]byte, T](size)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return pemCache[T]{parsed: c}
}

// get returns what text parses to, parsing it the first time.
func (c pemCache[T]) get(text string, parse func([]byte) (T, error)) (T, error) {
	key := sha256.Sum256([]byte(text))
	if v, ok := c.parsed.Get(key); ok {
		return v, nil
	}
	v, err := parse([]byte(text))
	if err != nil {
		return v, err
	}
	c.parsed.Add(key, v)
	return v, nil
}
