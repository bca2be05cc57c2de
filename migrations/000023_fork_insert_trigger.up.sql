-- A fork's copy (db.ForkConversation) brings each row's search vector (000019) and its
-- owner, so the search trigger has nothing to do for it; yet, called for every row, the
-- PL/pgSQL function's call and its owner lookup (000021) were about 15% of a fork's
-- time (140 to 175 ms of a 10,000-message fork's 0.9 to 1.0 s insert, auto_explain's
-- trigger times at a load of 11). A trigger's WHEN condition is evaluated without
-- calling the function, but cannot tell an insert from an update, so the trigger is
-- split: on insert it fires only when the row lacks its vector or its owner (every
-- insert but the fork's, and a fork by a replica of the previous version, which sends
-- no owner), on update as before. The function is unchanged. The insert trigger keeps
-- the name (bench/search switches it off by name to time a save without search).
DROP TRIGGER messages_search_vector ON messages;
CREATE TRIGGER messages_search_vector BEFORE INSERT ON messages
    FOR EACH ROW WHEN (NEW.search_vector IS NULL OR NEW.owner IS NULL) EXECUTE FUNCTION messages_search_vector();
CREATE TRIGGER messages_search_vector_update BEFORE UPDATE OF kind, content, payload, tool_calls, tool_results, status, deleted_at
    ON messages FOR EACH ROW EXECUTE FUNCTION messages_search_vector();
