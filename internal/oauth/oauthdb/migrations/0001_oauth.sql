-- The built-in OAuth authorization server's clients, grants and secrets.
-- Codes, tokens and client secrets are stored only as domain-separated
-- SHA-256 hashes. Times are Unix nanoseconds, UTC; NULL when unset.
CREATE TABLE clients (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    enrolment     TEXT NOT NULL,
    -- JSON array of redirect URIs.
    redirect_uris TEXT NOT NULL,
    auth_method   TEXT NOT NULL,
    secret_hash   TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    revoked_at    INTEGER,
    fetched_at    INTEGER NOT NULL,
    fresh_until   INTEGER NOT NULL
) STRICT;

CREATE TABLE grants (
    id         TEXT PRIMARY KEY,
    client_id  TEXT NOT NULL REFERENCES clients (id),
    owner      TEXT NOT NULL,
    subject    TEXT NOT NULL,
    -- JSON array of scope strings.
    scopes     TEXT NOT NULL,
    resource   TEXT NOT NULL,
    project    TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER
) STRICT;
CREATE INDEX grants_by_client ON grants (client_id);

CREATE TABLE secrets (
    hash         TEXT PRIMARY KEY,
    kind         TEXT NOT NULL,
    grant_id     TEXT NOT NULL REFERENCES grants (id),
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    used_at      INTEGER,
    challenge    TEXT NOT NULL,
    redirect_uri TEXT NOT NULL
) STRICT;
CREATE INDEX secrets_by_grant ON secrets (grant_id);
