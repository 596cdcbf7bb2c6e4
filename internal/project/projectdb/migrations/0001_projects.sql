-- The local project registry: one row per registered project.
CREATE TABLE projects (
    id       TEXT PRIMARY KEY,
    name     TEXT NOT NULL,
    root     TEXT NOT NULL,
    -- Unix nanoseconds, UTC.
    added_at INTEGER NOT NULL
) STRICT;
