-- The foreign keys of tool_calls to messages had no index: deleting a message (a
-- conversation's cascade) looked for the calls it made (ON DELETE CASCADE) and the calls
-- it answered (ON DELETE SET NULL) by scanning every owner's tool calls, twice per
-- message, while holding the conversation's lock; claiming a call looked it up by its
-- request the same way. (conversation_id leads the primary key, so it needs none.)
CREATE INDEX tool_calls_request_idx ON tool_calls (request_id, call_id);

-- Most calls have no result yet, or never will: only the ones that have are indexed.
CREATE INDEX tool_calls_result_idx ON tool_calls (result_id) WHERE result_id IS NOT NULL;
