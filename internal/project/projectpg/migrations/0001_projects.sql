-- The project registry (schema projects): one row per registered project,
-- and the runners that ever connected. Times are Unix nanoseconds, UTC.
CREATE TABLE projects.projects (
    id          text PRIMARY KEY,
    name        text NOT NULL,
    root        text NOT NULL,
    added_at    bigint NOT NULL,
    -- workspace-write, read-only or off; '' takes the server's default.
    sandbox     text NOT NULL DEFAULT '',
    -- A managed worktree's source project and base commit; '' otherwise.
    source      text NOT NULL DEFAULT '',
    base_commit text NOT NULL DEFAULT '',
    -- A runner's project: the runner's client id and its token's owner.
    runner      text NOT NULL DEFAULT '',
    owner       text NOT NULL DEFAULT ''
);
CREATE TABLE projects.runners (
    client_id    text PRIMARY KEY,
    owner        text NOT NULL,
    generation   bigint NOT NULL,
    instance_id  text NOT NULL,
    -- JSON object: what the runner's last hello said.
    hello        text NOT NULL,
    connected_at bigint NOT NULL,
    last_seen    bigint NOT NULL
);
