-- Fewer pages written per commit (docs/decisions/0042-fewer-pages-per-commit.md).
--
-- Only replies have entries in messages_by_reply: a message that replies
-- to nothing (most of them) no longer writes an index page when it is
-- posted or removed. Queries by reply_to also say reply_to != '', so the
-- planner can use the partial index.
DROP INDEX messages_by_reply;
CREATE INDEX messages_by_reply ON messages(session_id, reply_to, seq) WHERE reply_to != '';

-- The outbox without AUTOINCREMENT, whose sqlite_sequence row was one
-- more page written by every commit that stores a record. seq still
-- never goes back: a new row takes the largest seq present plus one, and
-- TrimOutbox never deletes the newest row. When the table is empty the
-- old sequence's last value is kept as a row with an empty body, which
-- the journal already holds (a row is trimmed only after the journal has
-- it durably), so the journal's watermark skips it.
CREATE TABLE evidence_outbox_0007 (
    seq  INTEGER PRIMARY KEY,
    body BLOB NOT NULL
);
INSERT INTO evidence_outbox_0007 (seq, body) SELECT seq, body FROM evidence_outbox;
INSERT INTO evidence_outbox_0007 (seq, body)
    SELECT seq, X'' FROM sqlite_sequence
    WHERE name = 'evidence_outbox' AND seq > (SELECT COALESCE(MAX(seq), 0) FROM evidence_outbox);
DROP TABLE evidence_outbox;
ALTER TABLE evidence_outbox_0007 RENAME TO evidence_outbox;
