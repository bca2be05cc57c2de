DROP INDEX IF EXISTS messages_mcp_resource_idx;
DROP INDEX IF EXISTS tool_calls_awaiting_idx;
ALTER TABLE tool_calls
    DROP COLUMN IF EXISTS claim_expires_at,
    DROP COLUMN IF EXISTS claimed_by,
    DROP COLUMN IF EXISTS decided_at,
    DROP COLUMN IF EXISTS approval_status;
