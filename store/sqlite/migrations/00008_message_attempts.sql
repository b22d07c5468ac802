-- +goose Up
-- Every settled processing attempt of a message, for operators.
CREATE TABLE message_attempts (
    message_id    TEXT NOT NULL,
    attempt       INTEGER NOT NULL,
    state         TEXT NOT NULL,
    outcome       TEXT NOT NULL,
    error_code    TEXT NOT NULL,
    error_message TEXT NOT NULL,
    at            INTEGER NOT NULL,
    PRIMARY KEY (message_id, attempt)
);

-- +goose Down
DROP TABLE message_attempts;
