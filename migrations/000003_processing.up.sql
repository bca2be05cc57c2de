-- Processing: the approval flow's work queue and the MCP resource cache.
--
-- tool_calls mirrors each call's approval status (kept in the messages' tool_calls too)
-- so that workers can find approved calls without a result through an index, and
-- records which worker claimed a call, and until when.
ALTER TABLE tool_calls
    ADD COLUMN approval_status  text NOT NULL DEFAULT 'PENDING'
        CHECK (approval_status IN ('PENDING', 'APPROVED', 'DENIED')),
    ADD COLUMN decided_at       timestamptz,
    ADD COLUMN claimed_by       text,
    ADD COLUMN claim_expires_at timestamptz;

UPDATE tool_calls t SET approval_status = c->>'approvalStatus',
    decided_at = (c->'decision'->>'decidedAt')::timestamptz
FROM messages m, jsonb_array_elements(m.tool_calls) c
WHERE m.id = t.request_id AND m.schema_version = 2 AND c->>'id' = t.call_id
    AND c->>'approvalStatus' IN ('APPROVED', 'DENIED');

CREATE INDEX tool_calls_awaiting_idx ON tool_calls (decided_at, conversation_id, call_id)
    WHERE approval_status = 'APPROVED' AND result_id IS NULL;

-- The latest MCP resource of a server and URI in a conversation, for the cache.
CREATE INDEX messages_mcp_resource_idx
    ON messages (conversation_id, (payload->>'serverName'), (payload->>'resourceUri'), position DESC)
    WHERE kind = 'mcp_resource';
