-- +goose Up
-- Search (DESIGN §13): full-text indexes of events' data and messages'
-- bodies, FTS5 with the trigram tokenizer, so `q` (and the string values
-- of a `match`) find rows by any part of a word. The indexes hold only
-- which rows have which trigrams (contentless, detail=none): the text stays
-- in events and message_bodies, and a search checks each row it finds.
--
-- Every row gets a place (seq) in its *_search_rows table when it is
-- written, by the triggers below; the index's rowid is that place, which a
-- VACUUM never renumbers. The store's indexer adds the rows past
-- search_progress to the index in small steps, off the commit that wrote
-- them; a search reads the index up to search_progress and checks the rows
-- past it directly, so it never misses a row the indexer has not reached.
CREATE TABLE event_search_rows (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL UNIQUE
);
CREATE TABLE message_search_rows (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT NOT NULL UNIQUE
);
CREATE VIRTUAL TABLE event_search USING fts5 (
    data, content = '', contentless_delete = 1, detail = none, tokenize = 'trigram'
);
CREATE VIRTUAL TABLE message_search USING fts5 (
    body, content = '', contentless_delete = 1, detail = none, tokenize = 'trigram'
);
-- How far each index got: every row with seq up to here is in it.
CREATE TABLE search_progress (
    name TEXT PRIMARY KEY,
    seq  INTEGER NOT NULL
);
INSERT INTO search_progress (name, seq) VALUES ('events', 0), ('messages', 0);

-- Every row already stored waits for the indexer, oldest first.
INSERT INTO event_search_rows (event_id) SELECT id FROM events ORDER BY id;
INSERT INTO message_search_rows (message_id) SELECT message_id FROM message_bodies ORDER BY message_id;

-- +goose StatementBegin
CREATE TRIGGER event_search_add AFTER INSERT ON events BEGIN
    INSERT INTO event_search_rows (event_id) VALUES (new.id);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER event_search_forget AFTER DELETE ON events BEGIN
    DELETE FROM event_search WHERE rowid = (SELECT seq FROM event_search_rows WHERE event_id = old.id);
    DELETE FROM event_search_rows WHERE event_id = old.id;
END;
-- +goose StatementEnd
-- A body's index goes with it: retention, erasure and deletion alike.
-- +goose StatementBegin
CREATE TRIGGER message_search_add AFTER INSERT ON message_bodies BEGIN
    INSERT INTO message_search_rows (message_id) VALUES (new.message_id);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER message_search_forget AFTER DELETE ON message_bodies BEGIN
    DELETE FROM message_search WHERE rowid = (SELECT seq FROM message_search_rows WHERE message_id = old.message_id);
    DELETE FROM message_search_rows WHERE message_id = old.message_id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER message_search_forget;
DROP TRIGGER message_search_add;
DROP TRIGGER event_search_forget;
DROP TRIGGER event_search_add;
DROP TABLE search_progress;
DROP TABLE message_search;
DROP TABLE event_search;
DROP TABLE message_search_rows;
DROP TABLE event_search_rows;
