-- Payloads in their own table (docs/decisions/0091-evidence-payload-table.md).
-- A purge used to blank a record's payload columns in place; SQLite never
-- reuses the bytes freed inside old pages of an append-only table, so the
-- file kept growing as if nothing had been purged. Now a record is a row
-- of record_leaves (kept forever: index, leaf hash, identifiers, time,
-- binding) and, until it is purged, a row of record_payloads (the
-- canonical bytes with the salt, and the content columns); a purge deletes
-- whole payload rows, whose pages later appends reuse. The view records
-- joins them back into the row every reader (and `webcodex evidence
-- verify`, on journals of either shape) reads; a purged record reads as
-- before, with empty content and empty canonical bytes.
CREATE TABLE record_leaves (
    idx                        INTEGER PRIMARY KEY,
    invocation_id              TEXT NOT NULL UNIQUE,
    key_id                     TEXT NOT NULL,
    at_ns                      INTEGER NOT NULL,
    claim_recording_session_id TEXT NOT NULL,
    claim_business_session_id  TEXT NOT NULL,
    verified_session_id        TEXT NOT NULL,
    session_binding            TEXT NOT NULL,
    leaf_hash                  BLOB NOT NULL,
    replay_of                  TEXT NOT NULL
);
CREATE TABLE record_payloads (
    idx                   INTEGER PRIMARY KEY,
    tool                  TEXT NOT NULL,
    source                TEXT NOT NULL,
    transport_era         TEXT NOT NULL,
    claim_project         TEXT NOT NULL,
    claim_principal_kind  TEXT NOT NULL,
    claim_client_window   TEXT NOT NULL,
    verified_project      TEXT NOT NULL,
    verified_authority    TEXT NOT NULL,
    verified_lifecycle    TEXT NOT NULL,
    binding_reasons       TEXT NOT NULL,
    checked_keys          TEXT NOT NULL,
    skipped_keys          TEXT NOT NULL,
    session_record_digest TEXT NOT NULL,
    outcome               TEXT NOT NULL,
    error_kind            TEXT NOT NULL,
    duration_ms           INTEGER NOT NULL,
    arguments_digest      TEXT NOT NULL,
    result_digest         TEXT NOT NULL,
    canonical             BLOB NOT NULL
);
INSERT INTO record_leaves
    SELECT idx, invocation_id, key_id, at_ns, claim_recording_session_id, claim_business_session_id,
        verified_session_id, session_binding, leaf_hash, replay_of
    FROM records;
-- A purged record (empty canonical bytes) has no payload row.
INSERT INTO record_payloads
    SELECT idx, tool, source, transport_era, claim_project, claim_principal_kind, claim_client_window,
        verified_project, verified_authority, verified_lifecycle, binding_reasons, checked_keys, skipped_keys,
        session_record_digest, outcome, error_kind, duration_ms, arguments_digest, result_digest, canonical
    FROM records WHERE length(canonical) > 0;
DROP TABLE records;
CREATE INDEX idx_records_claim_recording ON record_leaves (claim_recording_session_id);
CREATE INDEX idx_records_claim_business ON record_leaves (claim_business_session_id);
CREATE INDEX idx_records_verified_session ON record_leaves (verified_session_id);
CREATE VIEW records AS
    SELECT l.idx, l.invocation_id, l.key_id, l.at_ns,
        COALESCE(p.tool, '') AS tool, COALESCE(p.source, '') AS source, COALESCE(p.transport_era, '') AS transport_era,
        l.claim_recording_session_id, l.claim_business_session_id,
        COALESCE(p.claim_project, '') AS claim_project, COALESCE(p.claim_principal_kind, '') AS claim_principal_kind,
        COALESCE(p.claim_client_window, '') AS claim_client_window,
        l.verified_session_id,
        COALESCE(p.verified_project, '') AS verified_project, COALESCE(p.verified_authority, '') AS verified_authority,
        COALESCE(p.verified_lifecycle, '') AS verified_lifecycle,
        l.session_binding,
        COALESCE(p.binding_reasons, '') AS binding_reasons, COALESCE(p.checked_keys, '') AS checked_keys,
        COALESCE(p.skipped_keys, '') AS skipped_keys, COALESCE(p.session_record_digest, '') AS session_record_digest,
        COALESCE(p.outcome, '') AS outcome, COALESCE(p.error_kind, '') AS error_kind,
        COALESCE(p.duration_ms, 0) AS duration_ms,
        COALESCE(p.arguments_digest, '') AS arguments_digest, COALESCE(p.result_digest, '') AS result_digest,
        COALESCE(p.canonical, X'') AS canonical,
        l.leaf_hash, l.replay_of
    FROM record_leaves l LEFT JOIN record_payloads p ON p.idx = l.idx;
