-- The retention purge of job output (decisions 0087, 0090) reads the
-- terminal jobs whose output is kept, oldest first, page after page. This
-- partial index holds only the jobs whose output is not purged (the
-- record's output_purged is absent until the purge sets it), in that
-- order: without it every page sorted the whole table.
CREATE INDEX jobs_output_kept ON jobs (created_at, job_id) WHERE json_extract(record_json, '$.output_purged') IS NULL;
