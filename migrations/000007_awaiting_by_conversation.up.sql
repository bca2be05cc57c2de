-- Awaiting calls are read through the owner's conversations: the index leads with the
-- conversation, so one owner's read never walks another owner's calls.
DROP INDEX IF EXISTS tool_calls_awaiting_idx;
CREATE INDEX tool_calls_awaiting_conv_idx ON tool_calls (conversation_id, decided_at, call_id)
    WHERE approval_status = 'APPROVED' AND result_id IS NULL;
