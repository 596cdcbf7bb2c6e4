-- The retention purge (session_events_days) looks for closed sessions that
-- still hold events and were last updated before a cutoff. A partial index
-- holds only those sessions: a purged session (retained 0) leaves it.
CREATE INDEX sessions_purgeable ON sessions (updated_at) WHERE lifecycle = 'closed' AND retained > 0;
