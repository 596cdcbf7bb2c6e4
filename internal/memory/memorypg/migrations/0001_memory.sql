-- Project Memory (decision 0035) on PostgreSQL: scopes, the current
-- incarnation of each key, its superseded revisions (the current one is
-- the entry row), and a full-text index over keys, tags and bodies.
CREATE TABLE memory.scopes (
	scope_id      text PRIMARY KEY,
	project       text NOT NULL,
	root          text NOT NULL,
	created_at_ms bigint NOT NULL,
	-- entries is the live entry count, kept with every create and delete.
	entries       integer NOT NULL DEFAULT 0
);

-- fts weighs the key A, the tags B and the body C (FTS5's bm25 column
-- weights 10, 5, 1 in memorydb). Text is split on every character that
-- is not a letter, digit or underscore first, as FTS5's unicode61
-- tokenizer does, so a key like pitfalls/sqlite is two words.
CREATE TABLE memory.entries (
	id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	scope_id        text NOT NULL REFERENCES memory.scopes (scope_id),
	memory_key      text NOT NULL,
	memory_id       text NOT NULL UNIQUE,
	generation      bigint NOT NULL,
	revision        text NOT NULL,
	definition_hash text NOT NULL,
	body            text NOT NULL,
	tags            text NOT NULL, -- JSON array, sorted
	tag_text        text NOT NULL, -- the tags space-separated, for search
	pinned          boolean NOT NULL,
	written_by      text NOT NULL,
	created_at_ms   bigint NOT NULL,
	updated_at_ms   bigint NOT NULL,
	fts             tsvector GENERATED ALWAYS AS (
		setweight(to_tsvector('simple'::regconfig, regexp_replace(memory_key, '[^[:alnum:]_]+', ' ', 'g')), 'A') ||
		setweight(to_tsvector('simple'::regconfig, regexp_replace(tag_text, '[^[:alnum:]_]+', ' ', 'g')), 'B') ||
		setweight(to_tsvector('simple'::regconfig, regexp_replace(body, '[^[:alnum:]_]+', ' ', 'g')), 'C')) STORED,
	UNIQUE (scope_id, memory_key)
);

CREATE INDEX entries_order ON memory.entries (scope_id, pinned, updated_at_ms);
-- Search takes a scope's newest matches (MaxRankedCandidates) walking
-- this index backwards.
CREATE INDEX entries_recent ON memory.entries (scope_id, updated_at_ms, id);
CREATE INDEX entries_fts ON memory.entries USING gin (fts);

CREATE TABLE memory.history (
	memory_id     text NOT NULL,
	generation    bigint NOT NULL,
	revision      text NOT NULL,
	body          text NOT NULL,
	tags          text NOT NULL,
	written_by    text NOT NULL,
	written_at_ms bigint NOT NULL,
	PRIMARY KEY (memory_id, generation)
);
