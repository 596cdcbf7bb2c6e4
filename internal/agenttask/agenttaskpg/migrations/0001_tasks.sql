-- Agent Tasks, owned by the authority-group fingerprint of their creator.
-- labels and depends_on are JSON arrays, also kept as rows of task_labels
-- and task_deps for the filters. Times are Unix milliseconds.
CREATE TABLE tasks.tasks (
    id              text    PRIMARY KEY,
    owner           text    NOT NULL,
    project         text    NOT NULL,
    title           text    NOT NULL,
    body            text    NOT NULL,
    labels          text    NOT NULL,
    priority        bigint  NOT NULL,
    depends_on      text    NOT NULL,
    idempotency_key text    NOT NULL,
    payload_digest  text    NOT NULL,
    state           text    NOT NULL,
    generation      bigint  NOT NULL,
    revision        text    NOT NULL,
    fence           bigint  NOT NULL,
    created_at_ms   bigint  NOT NULL,
    updated_at_ms   bigint  NOT NULL
);
CREATE INDEX tasks_owner ON tasks.tasks (owner, project, state, priority, created_at_ms);
CREATE UNIQUE INDEX tasks_idempotency ON tasks.tasks (owner, project, idempotency_key) WHERE idempotency_key <> '';

CREATE TABLE tasks.task_labels (
    task_id text NOT NULL REFERENCES tasks.tasks (id),
    label   text NOT NULL,
    PRIMARY KEY (task_id, label)
);

-- depends_on as rows; immutable after creation.
CREATE TABLE tasks.task_deps (
    task_id text NOT NULL REFERENCES tasks.tasks (id),
    dep_id  text NOT NULL REFERENCES tasks.tasks (id),
    PRIMARY KEY (task_id, dep_id)
);

-- Attempts (schema tasks, as tasks.db): fence increases per task; at most one live attempt per task
-- (the partial unique index is the database's own guard).
CREATE TABLE tasks.attempts (
    id                text    PRIMARY KEY,
    task_id           text    NOT NULL REFERENCES tasks.tasks (id),
    session_id        text    NOT NULL,
    fence             bigint  NOT NULL,
    lease_until_ms    bigint  NOT NULL,
    state             text    NOT NULL,
    outcome           text    NOT NULL,
    summary           text    NOT NULL,
    completion_key    text    NOT NULL,
    completion_digest text    NOT NULL,
    started_at_ms     bigint  NOT NULL,
    ended_at_ms       bigint,
    UNIQUE (task_id, fence)
);
CREATE UNIQUE INDEX attempts_one_live ON tasks.attempts (task_id) WHERE state = 'live';
CREATE INDEX attempts_live_lease ON tasks.attempts (lease_until_ms) WHERE state = 'live';
