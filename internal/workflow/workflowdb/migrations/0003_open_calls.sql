-- Open tool calls: a tool_call_started whose tool_call_finished was never
-- appended. A row is inserted with its started event and deleted with its
-- finished event, in the same commit, so recovery at start reads only the
-- calls a crash cut off; the row outlives retention of the started event.
-- instance names the process that started the call (its lock file under
-- workflow.instances/); '' for calls found open at this upgrade.
CREATE TABLE open_calls (
    session_id    TEXT NOT NULL,
    call_id       TEXT NOT NULL,
    invocation_id TEXT NOT NULL,
    tool          TEXT NOT NULL,
    role          TEXT NOT NULL,
    started_at    INTEGER NOT NULL,
    started_seq   INTEGER NOT NULL,
    instance      TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (session_id, call_id)
) WITHOUT ROWID;

-- Calls already open in an existing ledger (only those whose started event
-- is still retained can be known).
CREATE INDEX tmp_events_calls ON events(session_id, call_id, kind);
INSERT OR IGNORE INTO open_calls (session_id, call_id, invocation_id, tool, role, started_at, started_seq)
SELECT s.session_id, s.call_id, s.invocation_id, s.tool, s.role, s.at, s.seq
FROM events s
WHERE s.kind = 'tool_call_started' AND s.call_id != ''
  AND NOT EXISTS (SELECT 1 FROM events f
                  WHERE f.session_id = s.session_id AND f.call_id = s.call_id AND f.kind = 'tool_call_finished');
DROP INDEX tmp_events_calls;
