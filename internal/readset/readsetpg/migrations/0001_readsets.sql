-- Read sets: the whole-file SHA-256 each Workflow Session last read (or
-- wrote) of a project file, with the authority-group fingerprint of the
-- caller; never file contents. Times are Unix milliseconds.
CREATE TABLE readsets.reads (
    session_id text    NOT NULL,
    project    text    NOT NULL,
    path       text    NOT NULL,
    owner      text    NOT NULL,
    sha256     text    NOT NULL,
    read_at_ms bigint  NOT NULL,
    PRIMARY KEY (session_id, project, path)
);
CREATE INDEX reads_by_path ON readsets.reads (project, path);

-- Notices owed to a session whose read of a path was followed by another
-- digest of it (sha256 '' when deleted or unknown); delivered once.
CREATE TABLE readsets.notices (
    session_id     text    NOT NULL,
    project        text    NOT NULL,
    path           text    NOT NULL,
    read_sha256    text    NOT NULL,
    sha256         text    NOT NULL,
    changed_by     text    NOT NULL,
    observed_at_ms bigint  NOT NULL,
    PRIMARY KEY (session_id, project, path)
);
