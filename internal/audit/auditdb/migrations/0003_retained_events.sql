-- How many events each session holds now (issue 13): the trim deletes
-- exactly the oldest events past audit.MaxEventsPerSession instead of
-- walking the newest 500 index entries on every append.
ALTER TABLE action_sessions ADD COLUMN retained_events INTEGER NOT NULL DEFAULT 0;
UPDATE action_sessions SET retained_events =
    (SELECT COUNT(*) FROM action_events e WHERE e.session_id = action_sessions.session_id);
