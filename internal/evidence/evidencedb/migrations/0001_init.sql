CREATE TABLE meta (
    k TEXT PRIMARY KEY,
    v TEXT NOT NULL
);
-- One row per record; idx is the RFC 6962 leaf index. canonical is the
-- hashed encoding, the other columns serve queries and are re-encoded by
-- verification, so editing either is detected.
CREATE TABLE records (
    idx                        INTEGER PRIMARY KEY,
    invocation_id              TEXT NOT NULL UNIQUE,
    key_id                     TEXT NOT NULL,
    at_ns                      INTEGER NOT NULL,
    tool                       TEXT NOT NULL,
    source                     TEXT NOT NULL,
    transport_era              TEXT NOT NULL,
    claim_recording_session_id TEXT NOT NULL,
    claim_business_session_id  TEXT NOT NULL,
    claim_project              TEXT NOT NULL,
    claim_principal_kind       TEXT NOT NULL,
    claim_client_window        TEXT NOT NULL,
    verified_session_id        TEXT NOT NULL,
    verified_project           TEXT NOT NULL,
    verified_authority         TEXT NOT NULL,
    verified_lifecycle         TEXT NOT NULL,
    session_binding            TEXT NOT NULL,
    binding_reasons            TEXT NOT NULL,
    checked_keys               TEXT NOT NULL,
    skipped_keys               TEXT NOT NULL,
    session_record_digest      TEXT NOT NULL,
    outcome                    TEXT NOT NULL,
    error_kind                 TEXT NOT NULL,
    duration_ms                INTEGER NOT NULL,
    arguments_digest           TEXT NOT NULL,
    result_digest              TEXT NOT NULL,
    canonical                  BLOB NOT NULL,
    leaf_hash                  BLOB NOT NULL
);
CREATE INDEX idx_records_claim_recording ON records (claim_recording_session_id);
CREATE INDEX idx_records_claim_business ON records (claim_business_session_id);
CREATE INDEX idx_records_verified_session ON records (verified_session_id);
CREATE TABLE checkpoints (
    id            INTEGER PRIMARY KEY,
    size          INTEGER NOT NULL,
    root          BLOB NOT NULL,
    key_id        TEXT NOT NULL,
    note          TEXT NOT NULL,
    created_at_ns INTEGER NOT NULL
);
CREATE INDEX idx_checkpoints_size ON checkpoints (size);
