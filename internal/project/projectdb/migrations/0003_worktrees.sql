-- Managed worktrees (work_on_project mode=worktree): the project id of the
-- source checkout and the exact base commit the worktree was created at;
-- both '' for an ordinary project.
ALTER TABLE projects ADD COLUMN source TEXT NOT NULL DEFAULT '';
ALTER TABLE projects ADD COLUMN base_commit TEXT NOT NULL DEFAULT '';
