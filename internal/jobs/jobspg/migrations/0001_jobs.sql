-- Job records (schema jobs). Output lives in files beside the server, not
-- here; no command text, arguments, environment or output is stored.
-- created_at is Unix nanoseconds.
CREATE TABLE jobs.jobs (
    job_id      text PRIMARY KEY,
    project     text NOT NULL,
    owner_fp    text NOT NULL,
    state       text NOT NULL,
    background  boolean NOT NULL,
    created_at  bigint NOT NULL,
    record_json text NOT NULL
);
CREATE INDEX jobs_by_owner ON jobs.jobs (project, owner_fp, created_at DESC);
CREATE INDEX jobs_by_state ON jobs.jobs (state);
