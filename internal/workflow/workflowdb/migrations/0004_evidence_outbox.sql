-- The evidence outbox (docs/decisions/0025-one-commit-per-acknowledgement.md):
-- a call's evidence record, stored in the transaction of its
-- tool_call_finished event, until the evidence journal (evidence.db) has
-- taken it durably. seq orders the journal's appends; rows the journal has
-- durably applied are deleted by a later batch.
CREATE TABLE evidence_outbox (
    seq  INTEGER PRIMARY KEY AUTOINCREMENT,
    body BLOB NOT NULL
);
-- read_marks holds, per process (workflow.instances/<instance>.lock), the
-- sequence of the newest read-only call whose events it has committed;
-- the lock file holds the newest it acknowledged. Their difference after
-- a crash is the number of acknowledged reads with no durable record.
CREATE TABLE read_marks (
    instance TEXT PRIMARY KEY,
    seq      INTEGER NOT NULL
);
