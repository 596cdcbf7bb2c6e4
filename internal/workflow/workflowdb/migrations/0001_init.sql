-- Workflow Session ledger (workflow.db). Nothing here is shared with the
-- Action Audit or evidence databases.
CREATE TABLE sessions (
    session_id  TEXT PRIMARY KEY,
    project     TEXT NOT NULL,
    owner_fp    TEXT NOT NULL,
    lifecycle   TEXT NOT NULL,
    updated_at  INTEGER NOT NULL,
    retained    INTEGER NOT NULL,
    header_json TEXT NOT NULL
);
CREATE INDEX sessions_by_project ON sessions(project, owner_fp, updated_at DESC);

CREATE TABLE events (
    session_id    TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    at            INTEGER NOT NULL,
    kind          TEXT NOT NULL,
    tool          TEXT NOT NULL DEFAULT '',
    call_id       TEXT NOT NULL DEFAULT '',
    invocation_id TEXT NOT NULL DEFAULT '',
    role          TEXT NOT NULL DEFAULT '',
    outcome       TEXT NOT NULL DEFAULT '',
    error_kind    TEXT NOT NULL DEFAULT '',
    duration_ms   INTEGER NOT NULL DEFAULT 0,
    text          TEXT NOT NULL DEFAULT '',
    observed_json TEXT NOT NULL DEFAULT '',
    changed_json  TEXT NOT NULL DEFAULT '',
    facts_json    TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

-- Rows found malformed at restore are moved here, never deleted silently
-- and never served.
CREATE TABLE discarded_rows (
    id         INTEGER PRIMARY KEY,
    table_name TEXT NOT NULL,
    row_key    TEXT NOT NULL,
    reason     TEXT NOT NULL,
    body       TEXT NOT NULL,
    at         INTEGER NOT NULL
);
