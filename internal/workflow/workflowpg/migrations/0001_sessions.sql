-- Workflow Session ledger (schema workflow). Nothing here is shared with the
-- Action Audit or evidence schemas. Times are Unix nanoseconds, as in
-- workflow.db; header_json holds the exact header bytes a read returns.
CREATE TABLE workflow.sessions (
    session_id  text   COLLATE "C" PRIMARY KEY,
    project     text   NOT NULL,
    owner_fp    text   NOT NULL,
    lifecycle   text   NOT NULL,
    updated_at  bigint NOT NULL,
    retained    bigint NOT NULL,
    header_json text   NOT NULL
);
CREATE INDEX sessions_by_project ON workflow.sessions (project, owner_fp, updated_at DESC);
CREATE INDEX sessions_by_update ON workflow.sessions (updated_at DESC);

CREATE TABLE workflow.events (
    session_id      text   COLLATE "C" NOT NULL,
    seq             bigint NOT NULL,
    at              bigint NOT NULL,
    kind            text   NOT NULL,
    tool            text   NOT NULL DEFAULT '',
    call_id         text   NOT NULL DEFAULT '',
    invocation_id   text   NOT NULL DEFAULT '',
    role            text   NOT NULL DEFAULT '',
    outcome         text   NOT NULL DEFAULT '',
    error_kind      text   NOT NULL DEFAULT '',
    duration_ms     bigint NOT NULL DEFAULT 0,
    text            text   NOT NULL DEFAULT '',
    observed_json   text   NOT NULL DEFAULT '',
    changed_json    text   NOT NULL DEFAULT '',
    facts_json      text   NOT NULL DEFAULT '',
    validation_json text   NOT NULL DEFAULT '',
    replay_of       text   NOT NULL DEFAULT '',
    PRIMARY KEY (session_id, seq)
);

-- Rows found malformed at first use are moved here, never deleted
-- silently and never served.
CREATE TABLE workflow.discarded_rows (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    table_name text   NOT NULL,
    row_key    text   NOT NULL,
    reason     text   NOT NULL,
    body       text   NOT NULL,
    at         bigint NOT NULL
);

-- Open tool calls: inserted with a call's tool_call_started and deleted
-- with its tool_call_finished, in the same commit. instance names the
-- replica process that started the call (workflow.instances); a call whose
-- instance is no longer alive was cut off.
CREATE TABLE workflow.open_calls (
    session_id    text   COLLATE "C" NOT NULL,
    call_id       text   COLLATE "C" NOT NULL,
    invocation_id text   NOT NULL,
    tool          text   NOT NULL,
    role          text   NOT NULL,
    started_at    bigint NOT NULL,
    started_seq   bigint NOT NULL,
    instance      text   NOT NULL,
    PRIMARY KEY (session_id, call_id)
);

-- One row per replica process that has opened the store. A live process
-- holds the session advisory lock (lock_class, lock_key) on a connection
-- of its own, so liveness is the database's answer, not a clock: a
-- process killed with -9 loses its lock when the server notices its
-- connection is gone. read_seq is the newest read-only call whose events
-- (or outbox row) it committed; instance_acks holds the newest it
-- acknowledged. Their difference, once the process is gone, counts
-- acknowledged reads with no durable record.
CREATE TABLE workflow.instances (
    instance   text   COLLATE "C" PRIMARY KEY,
    lock_key   bigint NOT NULL UNIQUE CHECK (lock_key > 0 AND lock_key < 2147483648),
    started_at bigint NOT NULL,
    read_seq   bigint NOT NULL DEFAULT 0
);
-- Unlogged: a replica writes its acknowledged-read mark before it
-- acknowledges each read-only call, and a write to an unlogged table
-- commits without waiting for a WAL flush. The mark survives the replica
-- being killed (the server holds it), which is the failure a behind write
-- is exposed to; a crash of the server itself empties the table, and
-- reads acknowledged just before it are not counted.
CREATE UNLOGGED TABLE workflow.instance_acks (
    instance  text   COLLATE "C" PRIMARY KEY,
    acked_seq bigint NOT NULL
);

-- The evidence outbox (decision 0025): a call's evidence record, stored in
-- the transaction of its tool_call_finished event, until the evidence
-- journal has taken it durably. seq is the journal's append order. It is
-- not a sequence (a sequence value can become visible after a larger
-- one): writers take the next seq from outbox_head, locked FOR UPDATE, so
-- rows become visible in seq order.
CREATE TABLE workflow.evidence_outbox (
    seq  bigint PRIMARY KEY,
    body bytea  NOT NULL
);
CREATE TABLE workflow.outbox_head (
    id       boolean PRIMARY KEY DEFAULT true CHECK (id),
    next_seq bigint  NOT NULL
);
INSERT INTO workflow.outbox_head (next_seq) VALUES (1);

-- Secret keys the server holds for itself (decision 0051), one row per
-- use, created by the first replica to open the store and read by every
-- other one; never exported.
CREATE TABLE workflow.server_keys (
    name text  COLLATE "C" PRIMARY KEY,
    key  bytea NOT NULL
);
