-- Window facts of MCP tool calls (issue 15 item 4): the principal-bound
-- ClientWindow hash, the principal correlation, whether the call was
-- meaningful, and millisecond times for agent-loop gaps.
ALTER TABLE action_events ADD COLUMN client_window TEXT;
ALTER TABLE action_events ADD COLUMN window_principal TEXT;
ALTER TABLE action_events ADD COLUMN meaningful INTEGER NOT NULL DEFAULT 0;
ALTER TABLE action_events ADD COLUMN started_at_ms INTEGER;
ALTER TABLE action_events ADD COLUMN ended_at_ms INTEGER;
CREATE INDEX idx_action_events_meaningful ON action_events (meaningful, seq) WHERE meaningful = 1;

-- Window<->Workflow Session relations: many-to-many, observational, no
-- authority. Times are unix seconds.
CREATE TABLE window_session_relations (
    window_principal TEXT    NOT NULL,
    client_window    TEXT    NOT NULL,
    session_id       TEXT    NOT NULL,
    kind             TEXT    NOT NULL CHECK (kind IN ('recording', 'work_on_project')),
    first_at         INTEGER NOT NULL,
    last_at          INTEGER NOT NULL,
    count            INTEGER NOT NULL,
    PRIMARY KEY (window_principal, client_window, session_id, kind)
) WITHOUT ROWID;
CREATE INDEX idx_window_session_relations_last ON window_session_relations (last_at);
