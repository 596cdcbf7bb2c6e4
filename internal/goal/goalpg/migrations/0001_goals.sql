-- Goals (schema goals): correlation-only, owned by the authority-group
-- fingerprint of their creator. steps is a JSON array of {title, status}.
-- Times are Unix milliseconds, as in goals.db.
CREATE TABLE goals.goals (
    id                 text    PRIMARY KEY,
    owner              text    NOT NULL,
    project            text    NOT NULL,
    title              text    NOT NULL,
    objective          text    NOT NULL,
    status             text    NOT NULL,
    generation         bigint  NOT NULL,
    revision           text    NOT NULL,
    steps              text    NOT NULL,
    recovery_summary   text    NOT NULL,
    checkpoints        bigint  NOT NULL,
    checkpointed_at_ms bigint,
    checkpoint_session text    NOT NULL,
    created_at_ms      bigint  NOT NULL,
    updated_at_ms      bigint  NOT NULL
);
CREATE INDEX goals_owner ON goals.goals (owner, updated_at_ms);

-- Recorded correlations of a Goal with a Workflow Session. seq orders
-- associations made in the same millisecond (as goals.db's rowid does).
CREATE TABLE goals.goal_sessions (
    goal_id          text   NOT NULL REFERENCES goals.goals (id),
    session_id       text   NOT NULL,
    project          text   NOT NULL,
    associated_at_ms bigint NOT NULL,
    seq              bigint GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (goal_id, session_id)
);
CREATE INDEX goal_sessions_session ON goals.goal_sessions (session_id, associated_at_ms, seq);
