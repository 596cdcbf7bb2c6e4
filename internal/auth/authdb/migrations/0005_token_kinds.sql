-- Credential kinds (issue 26): a token's kind ('api_token' for every
-- token made before kinds existed, and for runner tokens), the one project
-- a project credential or project share reaches (NULL: every project of
-- its owner), and its expiry (Unix nanoseconds, UTC; NULL: never).
ALTER TABLE tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'api_token';
ALTER TABLE tokens ADD COLUMN project TEXT;
ALTER TABLE tokens ADD COLUMN expires_at INTEGER;
