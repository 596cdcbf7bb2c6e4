-- The sessions' status index without last_event_at (issue 13): no query
-- orders by last_event_at alone (the listings order by
-- COALESCE(last_event_at, created_at), the idle lookup by updated_at), so
-- the second column served nothing, yet every event moved the session's
-- entry in it. Filtering on status is served as before.
DROP INDEX idx_action_sessions_status_last_event;
CREATE INDEX idx_action_sessions_status ON action_sessions (status);
