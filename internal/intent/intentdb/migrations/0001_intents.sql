-- Declared edit intents (decision 0079): at most one per Workflow
-- Session, owned by the authority-group fingerprint of the declaring
-- caller. globs is a JSON array; times are Unix milliseconds. An intent is
-- live while expires_at_ms is in the future and its session is open.
CREATE TABLE intents (
    session_id     TEXT    PRIMARY KEY,
    owner          TEXT    NOT NULL,
    project        TEXT    NOT NULL,
    globs          TEXT    NOT NULL,
    note           TEXT    NOT NULL,
    declared_at_ms INTEGER NOT NULL,
    expires_at_ms  INTEGER NOT NULL
);
CREATE INDEX intents_project ON intents (owner, project, expires_at_ms);

-- Undelivered overlap notices: one per recipient and other session, taken
-- (deleted) by the recipient's next model-facing call.
CREATE TABLE notices (
    recipient     TEXT    NOT NULL,
    other_session TEXT    NOT NULL,
    owner         TEXT    NOT NULL,
    project       TEXT    NOT NULL,
    kind          TEXT    NOT NULL,
    globs         TEXT    NOT NULL,
    paths         TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (recipient, other_session)
);
CREATE INDEX notices_created ON notices (created_at_ms);
