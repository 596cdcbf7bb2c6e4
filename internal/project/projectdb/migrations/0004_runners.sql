-- Projects served by a `webcodex runner` (agent:<client_id>:<name>): the
-- runner's client id and the authority group (owner) of its token; both ''
-- for a project on this host. Runners: the last generation each runner's
-- connections were given (so a restarted server never hands out a
-- generation again) and what its last hello said, for list_runners.
ALTER TABLE projects ADD COLUMN runner TEXT NOT NULL DEFAULT '';
ALTER TABLE projects ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE TABLE runners (
    client_id   TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    generation  INTEGER NOT NULL,
    instance_id TEXT NOT NULL,
    -- JSON object: version, os, arch, sandbox, capabilities, resources,
    -- max_concurrent_jobs of the last hello.
    hello       TEXT NOT NULL,
    -- Unix nanoseconds, UTC.
    connected_at INTEGER NOT NULL,
    last_seen    INTEGER NOT NULL
) STRICT;
