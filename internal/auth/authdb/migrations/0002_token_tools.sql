-- A token's tool profile (decision 0024): a JSON array of tool names, or
-- one of "core" and "full"; [] for the server's profile.
ALTER TABLE tokens ADD COLUMN tools TEXT NOT NULL DEFAULT '[]';
