-- The original effect an idempotent replay returned (docs/decisions/0050-replays-recorded-as-replays.md):
-- set on the tool_call_finished of a replay, '' on every other event.
-- An event is replayed exactly when replay_of is not empty.
ALTER TABLE events ADD COLUMN replay_of TEXT NOT NULL DEFAULT '';
