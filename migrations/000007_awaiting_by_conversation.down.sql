DROP INDEX IF EXISTS tool_calls_awaiting_conv_idx;
CREATE INDEX IF NOT EXISTS tool_calls_awaiting_idx ON tool_calls (decided_at, conversation_id, call_id)
    WHERE approval_status = 'APPROVED' AND result_id IS NULL;
