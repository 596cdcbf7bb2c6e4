-- Audit sessions belong to a principal (issue 24): idle reuse picks only
-- the caller's own sessions, and an explicit id that names another
-- principal's session resolves to a session of the caller's own that
-- remembers the id it was asked for (requested_id). Sessions created
-- before this migration have no principal ('') and are joined by no
-- authenticated caller.
ALTER TABLE action_sessions ADD COLUMN principal TEXT NOT NULL DEFAULT '';
ALTER TABLE action_sessions ADD COLUMN requested_id TEXT;
CREATE INDEX idx_action_sessions_requested ON action_sessions (requested_id) WHERE requested_id IS NOT NULL;
