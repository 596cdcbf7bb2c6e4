-- Window activity: one row per (principal, window, project), observational
-- only. window is the principal-bound ClientWindow hash, never a raw host
-- value; peer_id is its wc_peer_ route. Times are unix milliseconds.
CREATE TABLE window_activity (
    principal   TEXT    NOT NULL,
    window      TEXT    NOT NULL,
    project     TEXT    NOT NULL,
    peer_id     TEXT    NOT NULL,
    first_at_ms INTEGER NOT NULL,
    last_at_ms  INTEGER NOT NULL,
    calls       INTEGER NOT NULL,
    PRIMARY KEY (principal, window, project)
) WITHOUT ROWID;
CREATE INDEX window_activity_project ON window_activity (principal, project, last_at_ms);
CREATE INDEX window_activity_peer ON window_activity (principal, peer_id);
CREATE INDEX window_activity_last ON window_activity (last_at_ms);

-- Peer messages: bounded retained communication between windows of one
-- principal. The projection and ACK columns are analysis facts only.
CREATE TABLE peer_messages (
    id                       TEXT    PRIMARY KEY,
    principal                TEXT    NOT NULL,
    to_window                TEXT    NOT NULL,
    from_window              TEXT    NOT NULL,
    to_peer_id               TEXT    NOT NULL,
    from_peer_id             TEXT    NOT NULL,
    body                     TEXT    NOT NULL,
    requires_ack             INTEGER NOT NULL,
    priority                 TEXT    NOT NULL,
    created_at_ms            INTEGER NOT NULL,
    first_projected_at_ms    INTEGER,
    last_projected_at_ms     INTEGER,
    projection_count         INTEGER NOT NULL DEFAULT 0,
    first_ack_observed_at_ms INTEGER
);
CREATE INDEX peer_messages_to ON peer_messages (principal, to_window, created_at_ms);
CREATE INDEX peer_messages_created ON peer_messages (created_at_ms);
