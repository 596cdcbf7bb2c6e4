-- Goals: correlation-only, owned by the authority-group fingerprint of
-- their creator. steps is a JSON array of {title, status}. Times are unix
-- milliseconds.
CREATE TABLE goals (
    id                 TEXT    PRIMARY KEY,
    owner              TEXT    NOT NULL,
    project            TEXT    NOT NULL,
    title              TEXT    NOT NULL,
    objective          TEXT    NOT NULL,
    status             TEXT    NOT NULL,
    generation         INTEGER NOT NULL,
    revision           TEXT    NOT NULL,
    steps              TEXT    NOT NULL,
    recovery_summary   TEXT    NOT NULL,
    checkpoints        INTEGER NOT NULL,
    checkpointed_at_ms INTEGER,
    checkpoint_session TEXT    NOT NULL,
    created_at_ms      INTEGER NOT NULL,
    updated_at_ms      INTEGER NOT NULL
);
CREATE INDEX goals_owner ON goals (owner, updated_at_ms);

-- Recorded correlations of a Goal with a Workflow Session (the session's
-- project at association time). They grant nothing.
CREATE TABLE goal_sessions (
    goal_id          TEXT    NOT NULL REFERENCES goals (id),
    session_id       TEXT    NOT NULL,
    project          TEXT    NOT NULL,
    associated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (goal_id, session_id)
); -- a rowid table: the rowid orders associations made in the same millisecond
CREATE INDEX goal_sessions_session ON goal_sessions (session_id, associated_at_ms);
