-- The set of recent peers last shown to the window on the project as a
-- peer_awareness hint (a digest; "" or NULL when none was): the hint is
-- shown again only when that set changes.
ALTER TABLE window_activity ADD COLUMN aware_digest TEXT;
