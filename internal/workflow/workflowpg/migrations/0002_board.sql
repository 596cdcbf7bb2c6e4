-- Session-local message boards (see workflow.db's 0005_messages.sql for the
-- meaning of every column). A board row holds one session's durable
-- counters and is the row a board writer locks (FOR UPDATE): it orders
-- every change to that session's messages, as workflow.db's single writer
-- does. Times are Unix nanoseconds, 0 when unset.
CREATE TABLE workflow.message_boards (
    session_id                text   COLLATE "C" PRIMARY KEY,
    generation                bigint NOT NULL DEFAULT 0,
    posted                    bigint NOT NULL,
    retained                  bigint NOT NULL,
    removed                   bigint NOT NULL,
    observation_revision      bigint NOT NULL,
    observation_low_watermark bigint NOT NULL
);

CREATE TABLE workflow.messages (
    session_id             text   COLLATE "C" NOT NULL,
    message_id             text   COLLATE "C" NOT NULL,
    seq                    bigint NOT NULL,
    created_at             bigint NOT NULL,
    kind                   text   NOT NULL,
    status                 text   NOT NULL,
    priority               text   NOT NULL,
    body                   text   NOT NULL,
    tags_json              text   NOT NULL,
    reply_to               text   COLLATE "C" NOT NULL DEFAULT '',
    author_session_id      text   NOT NULL DEFAULT '',
    requires_ack           boolean NOT NULL DEFAULT false,
    resolved_at            bigint NOT NULL DEFAULT 0,
    resolution             text   NOT NULL DEFAULT '',
    resolved_by_message_id text   NOT NULL DEFAULT '',
    completion_id          text   NOT NULL DEFAULT '',
    delivery_key           text   COLLATE "C" NOT NULL DEFAULT '',
    delivery_fingerprint   text   NOT NULL DEFAULT '',
    completion_key         text   NOT NULL DEFAULT '',
    completion_fingerprint text   NOT NULL DEFAULT '',
    observation_revision   bigint NOT NULL,
    assignment_revision    bigint NOT NULL DEFAULT 0,
    replies_posted         bigint NOT NULL DEFAULT 0,
    replies_removed        bigint NOT NULL DEFAULT 0,
    first_ack_observed_at  bigint NOT NULL DEFAULT 0,
    first_projected_at     bigint NOT NULL DEFAULT 0,
    last_projected_at      bigint NOT NULL DEFAULT 0,
    projection_count       bigint NOT NULL DEFAULT 0,
    fetch_window           text   NOT NULL DEFAULT '',
    fetched_at             bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, message_id)
);
CREATE INDEX messages_by_status ON workflow.messages (session_id, status, seq);
CREATE INDEX messages_by_reply ON workflow.messages (session_id, reply_to, seq) WHERE reply_to <> '';
CREATE INDEX messages_by_observation ON workflow.messages (session_id, observation_revision);
CREATE UNIQUE INDEX messages_by_delivery_key ON workflow.messages (session_id, delivery_key) WHERE delivery_key <> '';
