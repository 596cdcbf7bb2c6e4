-- The change feed of each owner's project (wait_for_agent_events,
-- decision 0078): revision counts the committed changes of its tasks,
-- low_watermark is the revision below which retention removed changes
-- (0 until tasks are deleted). Every change of a task stamps its row with
-- the feed revision it made.
CREATE TABLE task_feed (
    owner         TEXT    NOT NULL,
    project       TEXT    NOT NULL,
    revision      INTEGER NOT NULL,
    low_watermark INTEGER NOT NULL,
    PRIMARY KEY (owner, project)
);
ALTER TABLE tasks ADD COLUMN feed_revision INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tasks_feed ON tasks (owner, project, feed_revision);

-- The store's secret keys (the events token key), made once per database.
CREATE TABLE task_keys (
    name TEXT PRIMARY KEY,
    key  BLOB NOT NULL
);
