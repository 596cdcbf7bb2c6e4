-- Structured validation evidence of validation_recorded events.
ALTER TABLE events ADD COLUMN validation_json TEXT NOT NULL DEFAULT '';
