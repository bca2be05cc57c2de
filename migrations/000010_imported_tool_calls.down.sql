DROP INDEX IF EXISTS tool_calls_awaiting_conv_idx;
CREATE INDEX tool_calls_awaiting_conv_idx ON tool_calls (conversation_id, decided_at, call_id)
    WHERE approval_status = 'APPROVED' AND result_id IS NULL;
ALTER TABLE tool_calls DROP COLUMN IF EXISTS imported;
