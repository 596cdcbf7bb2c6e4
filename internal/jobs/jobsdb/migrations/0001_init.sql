-- Job records (jobs.db). Output lives in files beside the database
-- (<data>/jobs/<job_id>/{stdout,stderr}); no command text, arguments,
-- environment or output is stored here.
CREATE TABLE jobs (
    job_id      TEXT PRIMARY KEY,
    project     TEXT NOT NULL,
    owner_fp    TEXT NOT NULL,
    state       TEXT NOT NULL,
    background  INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    record_json TEXT NOT NULL
);
CREATE INDEX jobs_by_owner ON jobs(project, owner_fp, created_at DESC);
CREATE INDEX jobs_by_state ON jobs(state);
