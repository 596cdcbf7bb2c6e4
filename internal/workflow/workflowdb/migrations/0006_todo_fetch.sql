-- The last get_session_assignment fetch of an open todo by a call that
-- carried a client window (stale assignment diagnostic, analysis only):
-- fetch_window is the principal-bound ClientWindow hash, never a raw host
-- value; fetched_at is Unix nanoseconds, 0 when unset. Neither column is
-- part of a message's observable state or of its assignment fence.
ALTER TABLE messages ADD COLUMN fetch_window TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN fetched_at INTEGER NOT NULL DEFAULT 0;
