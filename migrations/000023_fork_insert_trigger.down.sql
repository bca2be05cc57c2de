DROP TRIGGER messages_search_vector_update ON messages;
DROP TRIGGER messages_search_vector ON messages;
CREATE TRIGGER messages_search_vector BEFORE INSERT OR UPDATE OF kind, content, payload, tool_calls, tool_results, status, deleted_at
    ON messages FOR EACH ROW EXECUTE FUNCTION messages_search_vector();
