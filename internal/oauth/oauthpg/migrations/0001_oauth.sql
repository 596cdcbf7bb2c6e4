-- The built-in OAuth authorization server's clients, grants and secrets,
-- as in oauthdb's SQLite schema. Codes, tokens and client secrets are
-- stored only as domain-separated SHA-256 hashes. Times are Unix
-- nanoseconds, UTC; NULL when unset (a client's fetched_at and fresh_until
-- are 0 for the zero time).
CREATE TABLE oauth.clients (
    id            text PRIMARY KEY,
    name          text NOT NULL,
    enrolment     text NOT NULL,
    -- JSON array of redirect URIs, kept as written.
    redirect_uris text NOT NULL,
    auth_method   text NOT NULL,
    secret_hash   text NOT NULL,
    created_at    bigint NOT NULL,
    revoked_at    bigint,
    fetched_at    bigint NOT NULL,
    fresh_until   bigint NOT NULL
);
CREATE INDEX clients_by_creation ON oauth.clients (created_at, id);

CREATE TABLE oauth.grants (
    id         text PRIMARY KEY,
    client_id  text NOT NULL REFERENCES oauth.clients (id),
    owner      text NOT NULL,
    subject    text NOT NULL,
    -- JSON array of scope strings, kept as written.
    scopes     text NOT NULL,
    resource   text NOT NULL,
    project    text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    revoked_at bigint
);
CREATE INDEX grants_by_client ON oauth.grants (client_id);

CREATE TABLE oauth.secrets (
    hash         text PRIMARY KEY,
    kind         text NOT NULL,
    grant_id     text NOT NULL REFERENCES oauth.grants (id),
    created_at   bigint NOT NULL,
    expires_at   bigint NOT NULL,
    used_at      bigint,
    challenge    text NOT NULL,
    redirect_uri text NOT NULL
);
CREATE INDEX secrets_by_grant ON oauth.secrets (grant_id);
