-- LastActive looks a window up by its hash alone (the stale assignment
-- diagnostic knows the window, not the principal or project).
CREATE INDEX window_activity_window ON window_activity (window, last_at_ms);
