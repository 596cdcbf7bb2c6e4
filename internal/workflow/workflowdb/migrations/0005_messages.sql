-- Session-local message board. A board row holds one session's durable
-- counters; it is created with the session's first message.
-- observation_revision is the monotonic message-observation revision and
-- observation_low_watermark the highest revision of any message retention
-- removed (observation cursors below it have lost history). generation
-- changes when a board is restored under the same session id, so that
-- observation tokens of the earlier board fail closed.
CREATE TABLE message_boards (
    session_id                TEXT PRIMARY KEY,
    generation                INTEGER NOT NULL DEFAULT 0,
    posted                    INTEGER NOT NULL,
    retained                  INTEGER NOT NULL,
    removed                   INTEGER NOT NULL,
    observation_revision      INTEGER NOT NULL,
    observation_low_watermark INTEGER NOT NULL
) WITHOUT ROWID;

-- One row per retained message. Times are Unix nanoseconds, 0 when unset.
-- delivery_* and completion_* identify a post and a todo's completion for
-- idempotent replay; assignment_revision, replies_posted and
-- replies_removed are a todo's assignment-fence tracking; the
-- first/last_projected_at and projection_count columns are attention
-- projection facts (analysis only, never delivery or reading).
CREATE TABLE messages (
    session_id             TEXT NOT NULL,
    message_id             TEXT NOT NULL,
    seq                    INTEGER NOT NULL,
    created_at             INTEGER NOT NULL,
    kind                   TEXT NOT NULL,
    status                 TEXT NOT NULL,
    priority               TEXT NOT NULL,
    body                   TEXT NOT NULL,
    tags_json              TEXT NOT NULL,
    reply_to               TEXT NOT NULL DEFAULT '',
    author_session_id      TEXT NOT NULL DEFAULT '',
    requires_ack           INTEGER NOT NULL DEFAULT 0,
    resolved_at            INTEGER NOT NULL DEFAULT 0,
    resolution             TEXT NOT NULL DEFAULT '',
    resolved_by_message_id TEXT NOT NULL DEFAULT '',
    completion_id          TEXT NOT NULL DEFAULT '',
    delivery_key           TEXT NOT NULL DEFAULT '',
    delivery_fingerprint   TEXT NOT NULL DEFAULT '',
    completion_key         TEXT NOT NULL DEFAULT '',
    completion_fingerprint TEXT NOT NULL DEFAULT '',
    observation_revision   INTEGER NOT NULL,
    assignment_revision    INTEGER NOT NULL DEFAULT 0,
    replies_posted         INTEGER NOT NULL DEFAULT 0,
    replies_removed        INTEGER NOT NULL DEFAULT 0,
    first_ack_observed_at  INTEGER NOT NULL DEFAULT 0,
    first_projected_at     INTEGER NOT NULL DEFAULT 0,
    last_projected_at      INTEGER NOT NULL DEFAULT 0,
    projection_count       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, message_id)
) WITHOUT ROWID;
-- Retention takes the oldest messages of a status first; lists sort at
-- most 200 rows.
CREATE INDEX messages_by_status ON messages(session_id, status, seq);
CREATE INDEX messages_by_reply ON messages(session_id, reply_to, seq);
CREATE INDEX messages_by_observation ON messages(session_id, observation_revision);
CREATE UNIQUE INDEX messages_by_delivery_key ON messages(session_id, delivery_key) WHERE delivery_key != '';
