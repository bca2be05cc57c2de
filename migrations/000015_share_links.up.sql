-- A share link is a read-only API token scoped to one conversation (and, optionally, the
-- branch through one message, which the link opens on): it can read that conversation
-- and nothing else. Deleting the conversation deletes its links.
ALTER TABLE api_tokens
    ADD COLUMN conversation_id uuid REFERENCES conversations (id) ON DELETE CASCADE,
    ADD COLUMN branch text,
    ADD CONSTRAINT api_tokens_share_read_only CHECK (conversation_id IS NULL OR read_only),
    ADD CONSTRAINT api_tokens_branch_shared CHECK (branch IS NULL OR conversation_id IS NOT NULL);

CREATE INDEX api_tokens_conversation_idx ON api_tokens (conversation_id) WHERE conversation_id IS NOT NULL;
