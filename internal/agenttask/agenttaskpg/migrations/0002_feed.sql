-- The change feed of each owner's project (wait_for_agent_events,
-- decision 0078), as in tasks.db: revision counts the committed changes of
-- its tasks, low_watermark is the revision below which retention removed
-- changes (0 until tasks are deleted). Every change of a task stamps its
-- row with the feed revision it made.
CREATE TABLE tasks.task_feed (
    owner         text   NOT NULL,
    project       text   NOT NULL,
    revision      bigint NOT NULL,
    low_watermark bigint NOT NULL,
    PRIMARY KEY (owner, project)
);
ALTER TABLE tasks.tasks ADD COLUMN feed_revision bigint NOT NULL DEFAULT 0;
CREATE INDEX tasks_feed ON tasks.tasks (owner, project, feed_revision);

-- The store's secret keys (the events token key), made once per database.
CREATE TABLE tasks.task_keys (
    name text  PRIMARY KEY,
    key  bytea NOT NULL
);
