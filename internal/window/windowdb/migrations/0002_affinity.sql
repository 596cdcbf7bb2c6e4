-- The window's most recent explicit Workflow Session affinity on the
-- project (a verified recorder, or a work_on_project create/resume): the
-- only candidate a recorder continuity gap diagnostic may suggest. It
-- selects nothing and confers nothing.
ALTER TABLE window_activity ADD COLUMN affinity_session TEXT;
ALTER TABLE window_activity ADD COLUMN affinity_at_ms INTEGER;
