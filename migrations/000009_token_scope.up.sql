-- A read-only API token may query and subscribe, never mutate.
ALTER TABLE api_tokens ADD COLUMN read_only boolean NOT NULL DEFAULT false;
