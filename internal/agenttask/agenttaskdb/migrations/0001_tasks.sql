-- Agent Tasks, owned by the authority-group fingerprint of their creator.
-- labels and depends_on are JSON arrays, also kept as rows of task_labels
-- and task_deps for the filters. Times are Unix milliseconds.
CREATE TABLE tasks (
    id              TEXT    PRIMARY KEY,
    owner           TEXT    NOT NULL,
    project         TEXT    NOT NULL,
    title           TEXT    NOT NULL,
    body            TEXT    NOT NULL,
    labels          TEXT    NOT NULL,
    priority        INTEGER NOT NULL,
    depends_on      TEXT    NOT NULL,
    idempotency_key TEXT    NOT NULL,
    payload_digest  TEXT    NOT NULL,
    state           TEXT    NOT NULL,
    generation      INTEGER NOT NULL,
    revision        TEXT    NOT NULL,
    fence           INTEGER NOT NULL,
    created_at_ms   INTEGER NOT NULL,
    updated_at_ms   INTEGER NOT NULL
);
CREATE INDEX tasks_owner ON tasks (owner, project, state, priority, created_at_ms);
CREATE UNIQUE INDEX tasks_idempotency ON tasks (owner, project, idempotency_key) WHERE idempotency_key <> '';

CREATE TABLE task_labels (
    task_id TEXT NOT NULL REFERENCES tasks (id),
    label   TEXT NOT NULL,
    PRIMARY KEY (task_id, label)
);

-- depends_on as rows; immutable after creation.
CREATE TABLE task_deps (
    task_id TEXT NOT NULL REFERENCES tasks (id),
    dep_id  TEXT NOT NULL REFERENCES tasks (id),
    PRIMARY KEY (task_id, dep_id)
);

-- Attempts: fence increases per task; at most one live attempt per task
-- (the partial unique index is the database's own guard).
CREATE TABLE attempts (
    id                TEXT    PRIMARY KEY,
    task_id           TEXT    NOT NULL REFERENCES tasks (id),
    session_id        TEXT    NOT NULL,
    fence             INTEGER NOT NULL,
    lease_until_ms    INTEGER NOT NULL,
    state             TEXT    NOT NULL,
    outcome           TEXT    NOT NULL,
    summary           TEXT    NOT NULL,
    completion_key    TEXT    NOT NULL,
    completion_digest TEXT    NOT NULL,
    started_at_ms     INTEGER NOT NULL,
    ended_at_ms       INTEGER,
    UNIQUE (task_id, fence)
);
CREATE UNIQUE INDEX attempts_one_live ON attempts (task_id) WHERE state = 'live';
CREATE INDEX attempts_live_lease ON attempts (lease_until_ms) WHERE state = 'live';
