DROP TABLE api_tokens;
DROP INDEX conversations_owner_updated_idx;
CREATE INDEX conversations_updated_idx ON conversations (updated_at DESC, id DESC);
ALTER TABLE conversations DROP COLUMN owner;
