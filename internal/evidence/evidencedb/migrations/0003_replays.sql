-- The original effect a replayed call returned (canonical schema version 2,
-- docs/decisions/0050-replays-recorded-as-replays.md): '' for every record
-- that is no replay. Verification re-encodes it with the other columns.
ALTER TABLE records ADD COLUMN replay_of TEXT NOT NULL DEFAULT '';
