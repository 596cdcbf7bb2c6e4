-- The retention purge (audit_events_days) takes the events that ended
-- before a cutoff, oldest first: without this index every batch and every
-- count scanned the whole table. The index ends in the rowid (seq), so
-- ORDER BY ended_at, seq needs no sort.
CREATE INDEX idx_action_events_ended ON action_events (ended_at);
