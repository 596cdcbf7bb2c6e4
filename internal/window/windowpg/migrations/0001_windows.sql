-- Window activity (schema windows): one row per (principal, window,
-- project), observational only; the PostgreSQL form of window.db's four
-- migrations. The window column is named win here, because WINDOW is a
-- reserved word in PostgreSQL: it is the principal-bound ClientWindow
-- hash, never a raw host value; peer_id is its wc_peer_ route. Times are
-- Unix milliseconds, as in window.db. Text compared in ORDER BY uses the
-- C collation, so ties break byte-wise as in SQLite.
CREATE TABLE windows.window_activity (
    principal        text   COLLATE "C" NOT NULL,
    win              text   COLLATE "C" NOT NULL,
    project          text   COLLATE "C" NOT NULL,
    peer_id          text   COLLATE "C" NOT NULL,
    first_at_ms      bigint NOT NULL,
    last_at_ms       bigint NOT NULL,
    calls            bigint NOT NULL,
    -- The window's most recent explicit Workflow Session affinity on the
    -- project: the only candidate a recorder continuity gap diagnostic may
    -- suggest. It selects nothing and confers nothing.
    affinity_session text,
    affinity_at_ms   bigint,
    -- The digest of the peer set last shown to the window on the project
    -- as a peer_awareness hint ("" or NULL when none was).
    aware_digest     text,
    PRIMARY KEY (principal, win, project)
);
CREATE INDEX window_activity_project ON windows.window_activity (principal, project, last_at_ms);
CREATE INDEX window_activity_peer ON windows.window_activity (principal, peer_id);
CREATE INDEX window_activity_last ON windows.window_activity (last_at_ms);
-- LastActive looks a window up by its hash alone.
CREATE INDEX window_activity_window ON windows.window_activity (win, last_at_ms);

-- Peer messages: bounded retained communication between windows of one
-- principal. The projection and ACK columns are analysis facts only. seq
-- orders messages created in the same millisecond (as window.db's rowid
-- does).
CREATE TABLE windows.peer_messages (
    id                       text    PRIMARY KEY,
    principal                text    NOT NULL,
    to_window                text    NOT NULL,
    from_window              text    NOT NULL,
    to_peer_id               text    NOT NULL,
    from_peer_id             text    NOT NULL,
    body                     text    NOT NULL,
    requires_ack             boolean NOT NULL,
    priority                 text    NOT NULL,
    created_at_ms            bigint  NOT NULL,
    first_projected_at_ms    bigint,
    last_projected_at_ms     bigint,
    projection_count         bigint  NOT NULL DEFAULT 0,
    first_ack_observed_at_ms bigint,
    seq                      bigint  GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX peer_messages_to ON windows.peer_messages (principal, to_window, created_at_ms, seq);
CREATE INDEX peer_messages_created ON windows.peer_messages (created_at_ms);
