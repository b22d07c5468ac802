//go:build sqlite_cgo && !sqlite_fts5 && !fts5

package sqlite

// mattn/go-sqlite3 compiles SQLite without FTS5, which search's indexes
// are, unless its own tag is set too: build with -tags 'sqlite_cgo sqlite_fts5'.
var _ = build_with_tags_sqlite_cgo_and_sqlite_fts5
