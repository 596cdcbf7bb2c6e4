-- Read sets: the whole-file SHA-256 each Workflow Session last read (or
-- wrote) of a project file, with the authority-group fingerprint of the
-- caller; never file contents. Times are Unix milliseconds.
CREATE TABLE reads (
    session_id TEXT    NOT NULL,
    project    TEXT    NOT NULL,
    path       TEXT    NOT NULL,
    owner      TEXT    NOT NULL,
    sha256     TEXT    NOT NULL,
    read_at_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, project, path)
);
CREATE INDEX reads_by_path ON reads (project, path);

-- Notices owed to a session whose read of a path was followed by another
-- digest of it (sha256 '' when deleted or unknown); delivered once.
CREATE TABLE notices (
    session_id     TEXT    NOT NULL,
    project        TEXT    NOT NULL,
    path           TEXT    NOT NULL,
    read_sha256    TEXT    NOT NULL,
    sha256         TEXT    NOT NULL,
    changed_by     TEXT    NOT NULL,
    observed_at_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, project, path)
);
