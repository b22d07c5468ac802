package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/intakehq/intake"
)

// Search (DESIGN §13) on the embedded store: event_search and
// message_search (migration 00022) are FTS5 trigram indexes of events'
// data and messages' bodies. A search asks the index for the rows that
// hold the rarest trigrams of its words and of its match's string values
// (indexQuery), and judges each such row exactly: its words with instr
// over the row's text, its match with intake_contains (jsonMatch, as
// PostgreSQL judges jsonb @>). Rows the indexer has not reached are judged
// too.

// containsFunc is the SQL function intake_contains(data, match): 1 when
// data contains the match (jsonMatch.in), else 0.
const containsFunc = "intake_contains"

// lastMatch keeps the match a statement judges its rows by, parsed once.
var lastMatch atomic.Pointer[jsonMatch]

// intakeContains is intake_contains, which each driver's file registers.
func intakeContains(data, match driver.Value) (driver.Value, error) {
	text, ok := match.(string)
	if !ok {
		return nil, nil
	}
	m := lastMatch.Load()
	if m == nil || m.text != text {
		parsed, err := parseJSONMatch(text)
		if err != nil {
			return nil, err
		}
		m = parsed
		lastMatch.Store(m)
	}
	var raw []byte
	switch v := data.(type) {
	case string:
		raw = []byte(v)
	case []byte:
		raw = v
	default:
		return int64(0), nil
	}
	if m.in(raw) {
		return int64(1), nil
	}
	return int64(0), nil
}

// trigrams are the FTS5 terms, each a quoted trigram, that every text
// holding each of the pieces holds: at most maxProbed, each once, in
// order. The trigram tokenizer folds case, so a term matches in any case;
// a row the index finds is still judged exactly.
func trigrams(pieces []string) []string {
	seen := map[string]bool{}
	var terms []string
	for _, p := range pieces {
		r := []rune(p)
		for i := 0; i+3 <= len(r) && len(terms) < maxProbed; i++ {
			tri := string(r[i : i+3])
			if key := lowerASCII(tri); !seen[key] {
				seen[key] = true
				terms = append(terms, `"`+strings.ReplaceAll(tri, `"`, `""`)+`"`)
			}
		}
	}
	return terms
}

// How a search picks its index query. A trigram as common as "com" or a
// JSON key's is in most rows, and an FTS5 AND reads the whole of each
// term's list of rows, so a query of every trigram of "user42@example.com"
// costs hundreds of milliseconds at a million events where its rarest few
// cost a few. The store asks the index how many rows each trigram is in,
// counting no further than probeLimit, and ANDs the rarest maxTerms of those
// below it; a search whose every trigram is that common is of a word so
// common that reading rows in order and judging each finds a page sooner.
const (
	maxProbed  = 24
	maxTerms   = 6
	probeLimit = 20000
)

// probeSQL counts, for each term of the JSON array ?1, the rows of index
// table up to ?2.
func probeSQL(table string) string {
	return `SELECT t.value, (SELECT count(*) FROM (SELECT 1 FROM ` + table + ` WHERE ` + table + ` MATCH t.value LIMIT ?2))
		FROM json_each(?1) t`
}

var (
	probeEvents = probeSQL("event_search")
	probeBodies = probeSQL("message_search")
)

// indexQuery is the FTS5 query of the rarest of terms in the index probe
// reads, or "" when none is rare enough to be worth reading by.
func (s *Store) indexQuery(ctx context.Context, probe string, terms []string) (string, error) {
	if len(terms) == 0 {
		return "", nil
	}
	list, err := json.Marshal(terms)
	if err != nil {
		return "", err
	}
	rows, err := s.reader(ctx).QueryContext(ctx, probe, string(list), probeLimit)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	type counted struct {
		term string
		n    int
	}
	var rare []counted
	for rows.Next() {
		var c counted
		if err := rows.Scan(&c.term, &c.n); err != nil {
			return "", err
		}
		if c.n < probeLimit {
			rare = append(rare, c)
		}
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	slices.SortStableFunc(rare, func(a, b counted) int { return a.n - b.n })
	var q []string
	for _, c := range rare[:min(len(rare), maxTerms)] {
		q = append(q, c.term)
	}
	return strings.Join(q, " AND "), nil
}

// literalRuns are the parts of a match's string values that an event's
// data holds as written, whatever JSON encoder wrote it: runs of ASCII
// letters, digits and _-.:@+, which no encoder writes as escapes.
func literalRuns(values []string) []string {
	var out []string
	for _, v := range values {
		out = append(out, strings.FieldsFunc(v, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.:@+", r))
		})...)
	}
	return out
}

// lowerASCII lowers A to Z alone, as SQLite's lower() does: the words a
// row's text is searched for with instr(lower(text), word).
func lowerASCII(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// searchArgs are a search's parameters, by name, for the statements below.
type searchArgs struct {
	match     string // the match as JSON, "" for none
	words     string // JSON array of the words, lowered
	eventFTS  string // index query over events' data ("": read events in order)
	bodyFTS   string // index query over messages' bodies ("": none)
	bodyBytes int
}

// searchArgs makes sr's parameters: its words are events' (a search of
// events) or bodies' (of messages); a match is always events'.
func (s *Store) searchArgs(ctx context.Context, sr intake.Search, wordsInEvents bool) (searchArgs, error) {
	lowered := make([]string, len(sr.Words))
	for i, w := range sr.Words {
		lowered[i] = lowerASCII(w)
	}
	words, err := json.Marshal(lowered)
	if err != nil {
		return searchArgs{}, err
	}
	a := searchArgs{match: sr.Match.String(), words: string(words), bodyBytes: intake.SearchedBodyBytes}
	eventPieces := literalRuns(sr.Match.Strings())
	if wordsInEvents {
		eventPieces = append(eventPieces, sr.Words...)
	} else if a.bodyFTS, err = s.indexQuery(ctx, probeBodies, trigrams(sr.Words)); err != nil {
		return a, err
	}
	a.eventFTS, err = s.indexQuery(ctx, probeEvents, trigrams(eventPieces))
	return a, err
}

// indexedEvents are the events event_search finds for :event_fts, and
// those past its progress, which the indexer has not reached yet.
const indexedEvents = `SELECT r.event_id FROM event_search JOIN event_search_rows r ON r.seq = event_search.rowid
		WHERE event_search MATCH :event_fts
		UNION ALL
		SELECT event_id FROM event_search_rows WHERE seq > (SELECT seq FROM search_progress WHERE name = 'events')`

// indexedBodies is indexedEvents for messages' bodies.
const indexedBodies = `SELECT r.message_id FROM message_search JOIN message_search_rows r ON r.seq = message_search.rowid
		WHERE message_search MATCH :body_fts
		UNION ALL
		SELECT message_id FROM message_search_rows WHERE seq > (SELECT seq FROM search_progress WHERE name = 'messages')`

// eventJudged is what an event must hold for a search, judged on the row.
const eventJudged = `(:match = '' OR ` + containsFunc + `(data, :match))
	AND NOT EXISTS (SELECT 1 FROM json_each(:words) w WHERE instr(lower(data), w.value) = 0)`

// messageJudged is what a message must hold for a search, judged on its
// rows: an event of the type whose data contains the match, and a body
// holding the words.
const messageJudged = `(:type = '' AND :match = '' OR EXISTS (SELECT 1 FROM events e WHERE e.message_id = messages.id
		AND (:type = '' OR e.type = :type) AND (:match = '' OR ` + containsFunc + `(e.data, :match))))
	AND (:words = '[]' OR EXISTS (SELECT 1 FROM message_bodies b WHERE b.message_id = messages.id
		AND NOT EXISTS (SELECT 1 FROM json_each(:words) w WHERE instr(lower(substr(b.body, 1, :body_bytes)), w.value) = 0)))`

// The search's index steps, one per table, each a writer job of at most
// indexStepBytes of text (and indexStepRows rows): the rows past the
// progress, the text read and indexed, the progress saved.
const (
	indexStepBytes = 256 << 10
	indexStepRows  = 256
)

// A searchIndex's statements take exactly the arguments they name: a
// prepared statement of mattn/go-sqlite3 (driver_cgo.go) refuses more.
type searchIndex struct {
	name    string // in search_progress
	waiting string // whether a row waits past the progress
	pending string // seq and text length of the rows past ?1, at most ?2 of them
	insert  string // indexes the rows in (?1, ?2]
}

var searchIndexes = []searchIndex{
	{
		name:    "events",
		waiting: `SELECT EXISTS (SELECT 1 FROM event_search_rows WHERE seq > (SELECT seq FROM search_progress WHERE name = 'events'))`,
		pending: `SELECT r.seq, length(e.data) FROM event_search_rows r JOIN events e ON e.id = r.event_id
			WHERE r.seq > ?1 ORDER BY r.seq LIMIT ?2`,
		insert: `INSERT INTO event_search (rowid, data) SELECT r.seq, e.data FROM event_search_rows r JOIN events e ON e.id = r.event_id
			WHERE r.seq > ?1 AND r.seq <= ?2`,
	},
	{
		name:    "messages",
		waiting: `SELECT EXISTS (SELECT 1 FROM message_search_rows WHERE seq > (SELECT seq FROM search_progress WHERE name = 'messages'))`,
		pending: fmt.Sprintf(`SELECT r.seq, min(length(b.body), %d) FROM message_search_rows r JOIN message_bodies b ON b.message_id = r.message_id
			WHERE r.seq > ?1 ORDER BY r.seq LIMIT ?2`, intake.SearchedBodyBytes),
		insert: fmt.Sprintf(`INSERT INTO message_search (rowid, body) SELECT r.seq, substr(b.body, 1, %d) FROM message_search_rows r
			JOIN message_bodies b ON b.message_id = r.message_id WHERE r.seq > ?1 AND r.seq <= ?2`, intake.SearchedBodyBytes),
	},
}

// IndexSearch adds to the search indexes what was written since they were
// last brought up to date, one bounded step per index, and returns how
// many rows it indexed. The store's indexer calls it in the background;
// searches are exact whether or not it has run.
func (s *Store) IndexSearch(ctx context.Context) (int, error) {
	total := 0
	for _, ix := range searchIndexes {
		n, err := s.indexStep(ctx, ix)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

func (s *Store) indexStep(ctx context.Context, ix searchIndex) (int, error) {
	// A glance from the read pool first: an idle indexer costs the writer
	// nothing.
	var waiting bool
	if err := s.reader(ctx).QueryRowContext(ctx, ix.waiting).Scan(&waiting); err != nil || !waiting {
		return 0, err
	}
	n := 0
	err := s.submit(writeJob{ctx: ctx, background: true, fn: func(tx *wtx) error {
		n = 0
		var from int64
		if err := tx.QueryRowContext(ctx, `SELECT seq FROM search_progress WHERE name = ?`, ix.name).Scan(&from); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, ix.pending, from, indexStepRows)
		if err != nil {
			return err
		}
		upto, size := from, 0
		for rows.Next() {
			var seq int64
			var length sql.NullInt64
			if err := rows.Scan(&seq, &length); err != nil {
				rows.Close()
				return err
			}
			if n > 0 && size+int(length.Int64) > indexStepBytes {
				break
			}
			upto, size, n = seq, size+int(length.Int64), n+1
		}
		rows.Close()
		if err := rows.Err(); err != nil || n == 0 {
			return err
		}
		if _, err := tx.ExecContext(ctx, ix.insert, from, upto); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE search_progress SET seq = ? WHERE name = ?`, upto, ix.name)
		return err
	}})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// indexPoll is how often an idle indexer looks for rows to index;
// indexRest is how much longer than a step it rests while other writes
// wait.
const (
	indexPoll = 250 * time.Millisecond
	indexRest = 8
)

// indexLoop keeps the search indexes up to date until the store closes.
// It takes the writer one small step at a time, and when other writes
// came while it stepped it rests indexRest times as long as the step took,
// so indexing takes at most a ninth of a busy writer's time (and of the
// CPU it shares): ingest and settles come first, and a burst is indexed
// once it has passed.
func (s *Store) indexLoop() {
	defer close(s.indexDone)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-s.stop; cancel() }()
	t := time.NewTicker(indexPoll)
	defer t.Stop()
	for {
		start, others := time.Now(), s.foreground.Load()
		n, err := s.IndexSearch(ctx)
		rest := time.Duration(0)
		switch {
		case err != nil || n == 0:
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			continue
		case s.foreground.Load() != others:
			rest = indexRest * time.Since(start)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(rest):
		}
	}
}
