-- Action Audit Sessions (schema audit): never shared with the workflow
-- schema (Workflow Sessions) or any other. Times are unix seconds and
-- millisecond columns unix milliseconds, as in audit.db; seq orders
-- sessions and events in insertion order, as audit.db's rowid does.
CREATE TABLE audit.action_sessions (
    session_id               text    PRIMARY KEY,
    seq                      bigint  GENERATED ALWAYS AS IDENTITY,
    title                    text    NOT NULL DEFAULT '',
    note                     text    NOT NULL DEFAULT '',
    status                   text    NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
    created_at               bigint  NOT NULL,
    updated_at               bigint  NOT NULL,
    closed_at                bigint,
    first_event_at           bigint,
    last_event_at            bigint,
    total_actions            bigint  NOT NULL DEFAULT 0,
    success_count            bigint  NOT NULL DEFAULT 0,
    failed_count             bigint  NOT NULL DEFAULT 0,
    timeout_or_unknown_count bigint  NOT NULL DEFAULT 0,
    warning_count            bigint  NOT NULL DEFAULT 0,
    total_duration_ms        bigint  NOT NULL DEFAULT 0,
    changed_files_count      bigint  NOT NULL DEFAULT 0,
    job_ids_count            bigint  NOT NULL DEFAULT 0,
    -- How many events the session holds now; changed only under the
    -- session row's lock (auditpg.Store.AppendEvents).
    retained_events          bigint  NOT NULL DEFAULT 0,
    -- The principal (authority fingerprint) the session belongs to, ''
    -- for none, and the explicit id it was asked for when that id was
    -- another principal's session.
    principal                text    NOT NULL DEFAULT '',
    requested_id             text
);
CREATE INDEX action_sessions_status ON audit.action_sessions (status);
CREATE INDEX action_sessions_activity ON audit.action_sessions ((coalesce(last_event_at, created_at)) DESC, seq DESC);
CREATE INDEX action_sessions_idle ON audit.action_sessions (principal, updated_at DESC, seq DESC) WHERE status = 'open';
CREATE INDEX action_sessions_requested ON audit.action_sessions (requested_id, principal) WHERE requested_id IS NOT NULL;

CREATE TABLE audit.action_events (
    seq                bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id           text    NOT NULL UNIQUE,
    session_id         text    NOT NULL REFERENCES audit.action_sessions (session_id) ON DELETE CASCADE,
    started_at         bigint  NOT NULL,
    ended_at           bigint  NOT NULL,
    duration_ms        bigint  NOT NULL DEFAULT 0,
    endpoint           text    NOT NULL DEFAULT '',
    operation          text    NOT NULL DEFAULT '',
    action_name        text    NOT NULL DEFAULT '',
    project            text    NOT NULL DEFAULT '',
    status             text    NOT NULL DEFAULT '',
    http_status        bigint  NOT NULL DEFAULT 0,
    error_summary      text    NOT NULL DEFAULT '',
    warning_summary    text    NOT NULL DEFAULT '',
    changed_files_json text    NOT NULL DEFAULT '[]',
    ids_json           text    NOT NULL DEFAULT '{}',
    summary_json       text    NOT NULL DEFAULT '{}',
    request_bytes      bigint  NOT NULL DEFAULT 0,
    response_bytes     bigint  NOT NULL DEFAULT 0,
    principal_kind     text,
    principal_user_id  text,
    oauth_client_id    text,
    client_window      text,
    window_principal   text,
    meaningful         bigint  NOT NULL DEFAULT 0,
    started_at_ms      bigint,
    ended_at_ms        bigint
);
CREATE INDEX action_events_session_seq ON audit.action_events (session_id, seq);
CREATE INDEX action_events_meaningful ON audit.action_events (seq) WHERE meaningful = 1;

-- Window<->Workflow Session relations: many-to-many, observational, no
-- authority. Times are unix seconds.
CREATE TABLE audit.window_session_relations (
    window_principal text   NOT NULL,
    client_window    text   NOT NULL,
    session_id       text   NOT NULL,
    kind             text   NOT NULL CHECK (kind IN ('recording', 'work_on_project')),
    first_at         bigint NOT NULL,
    last_at          bigint NOT NULL,
    count            bigint NOT NULL,
    PRIMARY KEY (window_principal, client_window, session_id, kind)
);
CREATE INDEX window_session_relations_last ON audit.window_session_relations (last_at);
