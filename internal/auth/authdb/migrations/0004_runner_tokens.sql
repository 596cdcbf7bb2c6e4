-- Runner tokens (wc_runner_...): the client id of the `webcodex runner`
-- the token authenticates; '' for an API token. A runner token carries no
-- scopes and authenticates only the runner channel.
ALTER TABLE tokens ADD COLUMN runner TEXT NOT NULL DEFAULT '';
