ALTER TABLE api_tokens DROP COLUMN read_only;
