-- The evidence journal on PostgreSQL (docs/evidence.md): the same rows as
-- evidence.db, plus one head row that orders every append.
--
-- journal: the journal's identity, one row created once.
CREATE TABLE evidence.journal (
    id         smallint PRIMARY KEY CHECK (id = 1),
    journal_id text NOT NULL,
    origin     text NOT NULL
);
-- head: the log's one order. Every append, checkpoint and outbox batch
-- locks it FOR UPDATE; size is the next leaf index, hashes the compact
-- range at that size (concatenated 32-byte hashes), outbox_watermark the
-- highest workflow outbox sequence journaled.
CREATE TABLE evidence.head (
    id               smallint PRIMARY KEY CHECK (id = 1),
    size             bigint NOT NULL,
    hashes           bytea NOT NULL,
    outbox_watermark bigint NOT NULL
);
-- One row per record; idx is the RFC 6962 leaf index, assigned from the
-- head, never from a sequence.
CREATE TABLE evidence.records (
    idx                        bigint PRIMARY KEY,
    invocation_id              text COLLATE "C" NOT NULL UNIQUE,
    key_id                     text NOT NULL,
    at_ns                      bigint NOT NULL,
    tool                       text NOT NULL,
    source                     text NOT NULL,
    transport_era              text NOT NULL,
    claim_recording_session_id text COLLATE "C" NOT NULL,
    claim_business_session_id  text COLLATE "C" NOT NULL,
    claim_project              text NOT NULL,
    claim_principal_kind       text NOT NULL,
    claim_client_window        text NOT NULL,
    verified_session_id        text COLLATE "C" NOT NULL,
    verified_project           text NOT NULL,
    verified_authority         text NOT NULL,
    verified_lifecycle         text NOT NULL,
    session_binding            text NOT NULL,
    binding_reasons            text NOT NULL,
    checked_keys               text NOT NULL,
    skipped_keys               text NOT NULL,
    session_record_digest      text NOT NULL,
    outcome                    text NOT NULL,
    error_kind                 text NOT NULL,
    duration_ms                bigint NOT NULL,
    arguments_digest           text NOT NULL,
    result_digest              text NOT NULL,
    canonical                  bytea NOT NULL,
    leaf_hash                  bytea NOT NULL,
    replay_of                  text NOT NULL DEFAULT ''
);
CREATE INDEX records_claim_recording ON evidence.records (claim_recording_session_id);
CREATE INDEX records_claim_business ON evidence.records (claim_business_session_id);
CREATE INDEX records_verified_session ON evidence.records (verified_session_id);
-- Checkpoints are inserted under the head lock; id only breaks ties of
-- one size (a rotation's two signatures) in insertion order.
CREATE TABLE evidence.checkpoints (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    size          bigint NOT NULL,
    root          bytea NOT NULL,
    key_id        text NOT NULL,
    note          text NOT NULL,
    created_at_ns bigint NOT NULL
);
CREATE INDEX checkpoints_size ON evidence.checkpoints (size);
-- The tree index (decision 0022): every completed interior node (level
-- >= 1), written in each append's transaction, never trusted by verify.
CREATE TABLE evidence.tree_nodes (
    level integer NOT NULL,
    idx   bigint NOT NULL,
    hash  bytea NOT NULL,
    PRIMARY KEY (level, idx)
);
-- public_keys: every public key the journal's replicas signed with, the
-- database's evidence.pub (the private key is never stored here).
CREATE TABLE evidence.public_keys (
    key_id       text COLLATE "C" PRIMARY KEY,
    verifier_key text NOT NULL,
    added_at_ns  bigint NOT NULL
);
