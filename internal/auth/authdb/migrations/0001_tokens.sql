-- API tokens. Only the domain-separated SHA-256 hash of a raw token is
-- stored; the raw token never reaches this database.
CREATE TABLE tokens (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    owner        TEXT NOT NULL,
    -- JSON array of scope strings.
    scopes       TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    -- Unix nanoseconds, UTC; NULL when unset.
    created_at   INTEGER NOT NULL,
    revoked_at   INTEGER,
    last_used_at INTEGER
) STRICT;
