-- The purge log (docs/decisions/0086-evidence-payload-purge.md): one row
-- per purge batch, written in the batch's own transaction, so that a
-- record whose payload is gone without a row covering it is a finding of
-- `webcodex evidence verify` (unlogged_purge).
CREATE TABLE purges (
    id        INTEGER PRIMARY KEY,
    policy    TEXT NOT NULL,
    cutoff_ns INTEGER NOT NULL,
    first_idx INTEGER NOT NULL,
    last_idx  INTEGER NOT NULL,
    count     INTEGER NOT NULL,
    at_ns     INTEGER NOT NULL
);
