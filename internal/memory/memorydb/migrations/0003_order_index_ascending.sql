-- The listing order index, ascending (decision 0035). 0001 declared it
-- DESC, so each new entry (the newest updated_at_ms) went to the left end
-- of its scope's range, where SQLite's balancing keeps pages packed full
-- and nearly every insert split a page. Ascending, a new entry lands at
-- the right end; Each's ORDER BY pinned DESC, updated_at_ms DESC, id DESC
-- reads it backwards (the rowid, id, ends every index entry already).
DROP INDEX memory_entries_order;
CREATE INDEX memory_entries_order ON memory_entries (scope_id, pinned, updated_at_ms);
