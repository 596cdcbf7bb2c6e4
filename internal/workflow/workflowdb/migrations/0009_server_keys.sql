-- Secret keys the server holds for itself (decision 0051), one row per
-- use. 'observation_token' authenticates observe_session_messages tokens.
-- Created at the first Open (workflowdb/serverkey.go), never exported.
CREATE TABLE server_keys (
    name TEXT PRIMARY KEY,
    key  BLOB NOT NULL
) WITHOUT ROWID;
