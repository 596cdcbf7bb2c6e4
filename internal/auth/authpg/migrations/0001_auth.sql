-- The auth schema in its final shape (the SQLite store's migrations
-- 0001-0005 in one: PostgreSQL has no older databases).
--
-- Credentials of every kind: API tokens, runner tokens, project
-- credentials and project shares. Only the domain-separated SHA-256 hash
-- of a raw token is stored; the raw token never reaches this database.
CREATE TABLE auth.tokens (
    id           text PRIMARY KEY,
    name         text NOT NULL,
    owner        text NOT NULL,
    -- JSON array of scope strings, stored as written.
    scopes       text NOT NULL,
    token_hash   text NOT NULL UNIQUE,
    -- Unix nanoseconds, UTC; NULL when unset.
    created_at   bigint NOT NULL,
    revoked_at   bigint,
    last_used_at bigint,
    -- The tool profile (decision 0024): a JSON array of tool names, or
    -- one of "core" and "full"; [] for the server's profile.
    tools        text NOT NULL DEFAULT '[]',
    -- The client id of the `webcodex runner` a runner token
    -- authenticates; '' for every other token.
    runner       text NOT NULL DEFAULT '',
    -- The credential kind (issue 26), the one project a project-bound
    -- token reaches (NULL: every project of its owner) and its expiry
    -- (Unix nanoseconds, UTC; NULL: never).
    kind         text NOT NULL DEFAULT 'api_token',
    project      text,
    expires_at   bigint
);
-- List orders by creation time, then id.
CREATE INDEX tokens_created ON auth.tokens (created_at, id);

-- Runtime Console sessions (decision 0038). Only the domain-separated
-- SHA-256 of the cookie value is stored, and the stored hash of the token
-- the session was opened with (tokens.token_hash), so every request is
-- judged against that token as it is now.
CREATE TABLE auth.console_sessions (
    session_hash text PRIMARY KEY,
    token_hash   text NOT NULL,
    -- Unix nanoseconds, UTC.
    created_at   bigint NOT NULL,
    expires_at   bigint NOT NULL
);
CREATE INDEX console_sessions_expiry ON auth.console_sessions (expires_at);
