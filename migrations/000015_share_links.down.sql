DELETE FROM api_tokens WHERE conversation_id IS NOT NULL;
DROP INDEX IF EXISTS api_tokens_conversation_idx;
ALTER TABLE api_tokens
    DROP CONSTRAINT api_tokens_branch_shared,
    DROP CONSTRAINT api_tokens_share_read_only,
    DROP COLUMN branch,
    DROP COLUMN conversation_id;
