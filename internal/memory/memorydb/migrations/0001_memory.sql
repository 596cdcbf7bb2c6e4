-- Project Memory (decision 0035): scopes, the current incarnation of each
-- key, its kept revisions, and an FTS5 index over keys, tags and bodies.
CREATE TABLE memory_scopes (
	scope_id      TEXT PRIMARY KEY,
	project       TEXT NOT NULL,
	root          TEXT NOT NULL,
	created_at_ms INTEGER NOT NULL,
	-- entries is the live entry count, kept with every create and delete
	-- (the entries-per-scope bound reads it instead of counting rows).
	entries       INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE memory_entries (
	id              INTEGER PRIMARY KEY,
	scope_id        TEXT NOT NULL REFERENCES memory_scopes(scope_id),
	memory_key      TEXT NOT NULL,
	memory_id       TEXT NOT NULL UNIQUE,
	generation      INTEGER NOT NULL,
	revision        TEXT NOT NULL,
	definition_hash TEXT NOT NULL,
	body            TEXT NOT NULL,
	tags            TEXT NOT NULL, -- JSON array, sorted
	tag_text        TEXT NOT NULL, -- the tags space-separated, for FTS
	pinned          INTEGER NOT NULL,
	written_by      TEXT NOT NULL,
	created_at_ms   INTEGER NOT NULL,
	updated_at_ms   INTEGER NOT NULL,
	UNIQUE (scope_id, memory_key)
) STRICT;

CREATE INDEX memory_entries_order ON memory_entries (scope_id, pinned DESC, updated_at_ms DESC, id DESC);

CREATE TABLE memory_history (
	memory_id     TEXT NOT NULL,
	generation    INTEGER NOT NULL,
	revision      TEXT NOT NULL,
	body          TEXT NOT NULL,
	tags          TEXT NOT NULL,
	written_by    TEXT NOT NULL,
	written_at_ms INTEGER NOT NULL,
	PRIMARY KEY (memory_id, generation)
) STRICT;

CREATE VIRTUAL TABLE memory_fts USING fts5(
	memory_key, tag_text, body,
	content = 'memory_entries', content_rowid = 'id'
);

-- rank is BM25 weighting key 10, tags 5, body 1.
INSERT INTO memory_fts (memory_fts, rank) VALUES ('rank', 'bm25(10.0, 5.0, 1.0)');

CREATE TRIGGER memory_entries_ai AFTER INSERT ON memory_entries BEGIN
	INSERT INTO memory_fts (rowid, memory_key, tag_text, body) VALUES (new.id, new.memory_key, new.tag_text, new.body);
END;
CREATE TRIGGER memory_entries_ad AFTER DELETE ON memory_entries BEGIN
	INSERT INTO memory_fts (memory_fts, rowid, memory_key, tag_text, body) VALUES ('delete', old.id, old.memory_key, old.tag_text, old.body);
END;
CREATE TRIGGER memory_entries_au AFTER UPDATE ON memory_entries BEGIN
	INSERT INTO memory_fts (memory_fts, rowid, memory_key, tag_text, body) VALUES ('delete', old.id, old.memory_key, old.tag_text, old.body);
	INSERT INTO memory_fts (rowid, memory_key, tag_text, body) VALUES (new.id, new.memory_key, new.tag_text, new.body);
END;
