DROP INDEX messages_search_idx;
CREATE INDEX messages_search_idx ON messages USING gin (conversation_id, search_vector) WHERE search_vector IS NOT NULL;
CREATE INDEX messages_search_tool_result_idx ON messages (owner, (tool_results->0->>'status'), (tool_results->0->>'toolName'))
    WHERE kind = 'tool_result' AND search_vector IS NOT NULL;
DROP FUNCTION search_tool_keys(text, text, jsonb);
