-- Declared edit intents (decision 0079): at most one per Workflow
-- Session, owned by the authority-group fingerprint of the declaring
-- caller. globs is a JSON array; times are Unix milliseconds. An intent is
-- live while expires_at_ms is in the future and its session is open.
CREATE TABLE intents.intents (
    session_id     text    PRIMARY KEY,
    owner          text    NOT NULL,
    project        text    NOT NULL,
    globs          text    NOT NULL,
    note           text    NOT NULL,
    declared_at_ms bigint  NOT NULL,
    expires_at_ms  bigint  NOT NULL
);
CREATE INDEX intents_project ON intents.intents (owner, project, expires_at_ms);

-- Undelivered overlap notices: one per recipient and other session, taken
-- (deleted) by the recipient's next model-facing call.
CREATE TABLE intents.notices (
    recipient     text    NOT NULL,
    other_session text    NOT NULL,
    owner         text    NOT NULL,
    project       text    NOT NULL,
    kind          text    NOT NULL,
    globs         text    NOT NULL,
    paths         text    NOT NULL,
    created_at_ms bigint  NOT NULL,
    PRIMARY KEY (recipient, other_session)
);
CREATE INDEX notices_created ON intents.notices (created_at_ms);
