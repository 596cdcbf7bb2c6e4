-- Runtime Console sessions (decision 0038). Only the domain-separated
-- SHA-256 of the cookie value is stored, and the stored hash of the token
-- the session was opened with (tokens.token_hash), so every request is
-- judged against that token as it is now.
CREATE TABLE console_sessions (
    session_hash TEXT PRIMARY KEY,
    token_hash   TEXT NOT NULL,
    -- Unix nanoseconds, UTC.
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
