-- Search filtered by a tool result's status (issue 18's filtered target, 20 ms). 000021
-- read a tool result filter through a b-tree on (owner, status, tool name) and checked
-- the words on every row it found: the heavy owner's 6,726 bash errors read from the
-- table for 2,517 that have "timeout" (38 ms on a quiet machine, its estimate one row).
-- Now the search index itself knows a tool result's owner, status and tool, as keys,
-- so a filtered search intersects them with the words in the index and reads only the
-- rows that match both.
--
-- search_tool_keys: a tool result's keys, owner<US>status and owner<US>status<US>tool
-- (US, \x1f, is in no owner's status; the owner is in the key so that a key's posting
-- list is one owner's, not every owner's); NULL for other messages. A status filter
-- asks for the first (@>), a status and tool names filter for any of the second (&&).
-- SQL, inlined: the index's expression and the query's are the same.
CREATE FUNCTION search_tool_keys(owner text, kind text, tool_results jsonb) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN kind = 'tool_result' THEN ARRAY[
        owner || E'\x1f' || (tool_results->0->>'status'),
        owner || E'\x1f' || (tool_results->0->>'status') || E'\x1f' || (tool_results->0->>'toolName')] END;

-- One GIN index for words and keys: a message gets one entry more (its keys, or the
-- placeholder of a NULL), where a second index would take every word again. The b-tree
-- of 000021 goes: a save of a tool result keeps one index fewer. Rebuilding the index
-- takes about a minute for a million messages, during which messages cannot be written.
DROP INDEX messages_search_idx;
CREATE INDEX messages_search_idx ON messages USING gin (conversation_id, search_tool_keys(owner, kind, tool_results), search_vector)
    WHERE search_vector IS NOT NULL;
DROP INDEX messages_search_tool_result_idx;
