package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// Search (DESIGN §13) on PostgreSQL (migrations 00020, 00035): a match is
// intake_jsonb(data) @> match, served by the GIN jsonb_path_ops index
// event_search_match; each word of q is an ILIKE '%word%' over data::text
// (event_search_text) or over bodyText (message_bodies_text, of the bodies
// indexLoop has made searchable), all pg_trgm GIN indexes. An event's data
// is judged in its event_search row, which triggers on events write and
// delete with the event, so that the updates of an events row never index
// its data again. The longest word goes first, alone, where the index
// serves it; every word is then judged on the rows it finds.

// bodyText is a body as message_bodies_text indexes it: its first
// SearchedBodyBytes as text, bytes above 0x7f written \ooo.
var bodyText = fmt.Sprintf(`encode(substring(b.body FROM 1 FOR %d), 'escape')`, intake.SearchedBodyBytes)

// searchArgs are a search's parameters.
type searchArgs struct {
	match    *string  // the match as JSON; nil for none
	lead     string   // the ILIKE pattern of the longest word, "" for none
	patterns []string // the ILIKE patterns of every word
}

// newSearchArgs makes s's parameters; inBodies writes the words as
// bodyText holds them.
func newSearchArgs(s intake.Search, inBodies bool) searchArgs {
	a := searchArgs{patterns: []string{}}
	if !s.Match.IsZero() {
		m := s.Match.String()
		a.match = &m
	}
	longest := ""
	for _, w := range s.Words {
		if inBodies {
			w = escapeBytes(w)
		}
		p := "%" + escapeLike(w) + "%"
		a.patterns = append(a.patterns, p)
		if len(w) > len(longest) {
			longest, a.lead = w, p
		}
	}
	return a
}

// escapeLike makes s match itself alone in a LIKE pattern.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// escapeBytes writes s as encode(…, 'escape') writes its bytes.
func escapeBytes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b.WriteString(`\\`)
		case c == 0 || c >= 0x80:
			fmt.Fprintf(&b, `\%03o`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// indexBatch bounds the bodies one step of indexLoop makes searchable.
const indexBatch = 200

// indexPoll is how often an idle indexLoop looks for bodies to index.
const indexPoll = 250 * time.Millisecond

// IndexSearch makes searchable (so message_bodies_text indexes them) up to
// indexBatch bodies stored unsearchable, skipping any another process is
// indexing, and returns how many. Searches are exact whether or not it has
// run: they check unsearchable bodies directly.
func (s *Store) IndexSearch(ctx context.Context) (int, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE message_bodies SET searchable = true WHERE message_id IN (
		SELECT message_id FROM message_bodies WHERE NOT searchable LIMIT $1 FOR UPDATE SKIP LOCKED)`, indexBatch)
	return int(tag.RowsAffected()), classify(err)
}

// indexRest is how much longer than a step the indexer rests while the
// pipeline commits: it takes at most a ninth of a connection from a busy
// store, and catches up, a step straight after another, once it is quiet.
// Searches are exact meanwhile, checking the bodies not yet indexed one by
// one (SQLite's indexer is paced the same way).
const indexRest = 8

// indexLoop indexes what ingest stored, a batch at a time, until ctx ends;
// every process runs one, and they share the work. After a step during
// which the pipeline committed it rests indexRest times as long as the
// step took.
func (s *Store) indexLoop(ctx context.Context) {
	defer close(s.indexDone)
	t := time.NewTicker(indexPoll)
	defer t.Stop()
	for {
		start, others := time.Now(), s.foreground.Load()
		n, err := s.IndexSearch(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("postgres: search indexer", "err", err)
			n = 0
		}
		wait := t.C
		switch rest, poll := nextIndexStep(n, time.Since(start), s.foreground.Load() != others); {
		case poll:
		case rest == 0:
			continue
		default:
			wait = time.After(rest)
		}
		select {
		case <-ctx.Done():
			return
		case <-wait:
		}
	}
}

// nextIndexStep decides what the indexer does after a step that indexed n
// bodies in took, the pipeline having committed meanwhile or not: poll
// (nothing more waits), or step again after rest.
func nextIndexStep(n int, took time.Duration, committed bool) (rest time.Duration, poll bool) {
	switch {
	case n < indexBatch:
		return 0, true
	case committed:
		return indexRest * took, false
	}
	return 0, false
}
