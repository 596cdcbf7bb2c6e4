-- The purge log (docs/decisions/0086-evidence-payload-purge.md): one row
-- per purge batch, written in the batch's own transaction, so that a
-- record whose payload is gone without a row covering it is a finding of
-- `webcodex evidence verify` (unlogged_purge).
CREATE TABLE evidence.purges (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    policy    text NOT NULL,
    cutoff_ns bigint NOT NULL,
    first_idx bigint NOT NULL,
    last_idx  bigint NOT NULL,
    count     bigint NOT NULL,
    at_ns     bigint NOT NULL
);
