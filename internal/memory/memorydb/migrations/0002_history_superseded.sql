-- memory_history keeps only superseded revisions (decision 0035): an
-- incarnation's current revision is its memory_entries row, which a put
-- copies into memory_history only when it replaces it. Drop the copies of
-- current revisions that 0001's puts wrote, so that the history and the
-- entry together keep MaxHistoryPerKey revisions, as before.
DELETE FROM memory_history WHERE EXISTS (SELECT 1 FROM memory_entries e
	WHERE e.memory_id = memory_history.memory_id AND e.generation = memory_history.generation);
