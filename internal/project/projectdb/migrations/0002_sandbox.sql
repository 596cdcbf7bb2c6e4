-- The project's sandbox mode for the processes agents start in it:
-- workspace-write, read-only or off; '' takes the server's default.
ALTER TABLE projects ADD COLUMN sandbox TEXT NOT NULL DEFAULT '';
