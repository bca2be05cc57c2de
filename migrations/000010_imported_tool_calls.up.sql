-- Imported tool calls are history, not requests: a call that came with an import is
-- marked imported until a person decides it here, and the work queue (the awaiting
-- index and every query of it) leaves imported calls out, so an import can neither put
-- a call past the tool policies nor forge a decision that puts it in the queue.
ALTER TABLE tool_calls ADD COLUMN imported boolean NOT NULL DEFAULT false;

-- Calls of imported messages never decided here (a decision here would have updated
-- the index's status) are imported; their index status is the message's, which COPY
-- left PENDING for calls imported decided (an APPROVED call stuck PENDING in the index).
UPDATE tool_calls t SET imported = true, approval_status = c->>'approvalStatus',
    decided_at = (c->'decision'->>'decidedAt')::timestamptz
FROM messages m, jsonb_array_elements(m.tool_calls) c
WHERE m.id = t.request_id AND m.source_id IS NOT NULL AND m.schema_version = 2
    AND jsonb_typeof(m.tool_calls) = 'array' AND c->>'id' = t.call_id
    AND t.approval_status = 'PENDING' AND c->>'approvalStatus' IN ('PENDING', 'APPROVED', 'DENIED');

-- The messages say so too (their calls' "imported").
UPDATE messages m SET tool_calls = (
    SELECT jsonb_agg(CASE WHEN t.imported THEN c || '{"imported": true}'::jsonb ELSE c END ORDER BY o)
    FROM jsonb_array_elements(m.tool_calls) WITH ORDINALITY AS e(c, o)
    LEFT JOIN tool_calls t ON t.conversation_id = m.conversation_id AND t.call_id = c->>'id')
WHERE m.schema_version = 2 AND jsonb_typeof(m.tool_calls) = 'array'
    AND m.id IN (SELECT request_id FROM tool_calls WHERE imported);

DROP INDEX IF EXISTS tool_calls_awaiting_conv_idx;
CREATE INDEX tool_calls_awaiting_conv_idx ON tool_calls (conversation_id, decided_at, call_id)
    WHERE approval_status = 'APPROVED' AND result_id IS NULL AND NOT imported;
