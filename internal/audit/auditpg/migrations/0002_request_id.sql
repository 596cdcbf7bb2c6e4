-- The request id of the HTTP request an event records (issue 30): the id
-- its response header, log lines and trace span carry. NULL for events
-- written before this migration.
ALTER TABLE audit.action_events ADD COLUMN request_id text;
