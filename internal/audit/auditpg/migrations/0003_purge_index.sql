-- The retention purge (audit_events_days) takes the events that ended
-- before a cutoff, oldest first (ORDER BY ended_at, seq): without this
-- index every batch and every count scanned the whole table.
CREATE INDEX action_events_ended ON audit.action_events (ended_at, seq);
