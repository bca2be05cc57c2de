-- Search by owner (issue 18's benchmark targets). The search index knew conversations,
-- not owners: a search of a rare word by an owner with thousands of conversations either
-- probed the index once per conversation or read every match of the word, every owner's,
-- and filtered. Messages now carry their conversation's owner (an owner never changes:
-- no statement moves a conversation or a message), set by the search trigger when a
-- message is inserted, whatever inserts it (a mutation, an import's COPY, a stream).
--
-- The indexes, all partial on the rows a search can find (a vector: not streaming, not
-- deleted), so that a message without one costs them nothing:
-- - messages_search_idx, GIN on (owner, conversation_id, search_vector) (btree_gin): an
--   owner's matches of rare words in one scan (owner and words), and still a
--   conversation's matches (conversation and words) for relevance's newest-conversations
--   candidates of a common word;
-- - messages_search_newest_idx, b-tree on (owner, created_at, id): NEWEST reads an
--   owner's messages newest first and stops at the page, checking the words on each;
-- - messages_search_tool_result_idx, b-tree on a tool result's (owner, status, tool
--   name): the filtered query finds the owner's results of that status and tool without
--   reading every match of its words.
--
-- Filling the column rewrites every message (minutes for millions, during which messages
-- cannot be written); the indexes are built after it.
ALTER TABLE messages ADD COLUMN owner text;

CREATE OR REPLACE FUNCTION messages_search_vector() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.owner := (SELECT owner FROM conversations WHERE id = NEW.conversation_id);
    END IF;
    IF NEW.status = 'streaming' OR NEW.deleted_at IS NOT NULL THEN
        NEW.search_vector := NULL;
    ELSE
        NEW.search_vector := message_search_vector((SELECT config FROM search_config), NEW.kind, NEW.content,
            NEW.payload, NEW.tool_calls, NEW.tool_results);
    END IF;
    RETURN NEW;
END $$;

-- The trigger fires on updates of the searched columns only, not of owner.
UPDATE messages m SET owner = c.owner FROM conversations c WHERE c.id = m.conversation_id;

DROP INDEX messages_search_idx;
CREATE INDEX messages_search_idx ON messages USING gin (owner, conversation_id, search_vector) WHERE search_vector IS NOT NULL;
CREATE INDEX messages_search_newest_idx ON messages (owner, created_at, id) WHERE search_vector IS NOT NULL;
CREATE INDEX messages_search_tool_result_idx ON messages (owner, (tool_results->0->>'status'), (tool_results->0->>'toolName'))
    WHERE kind = 'tool_result' AND search_vector IS NOT NULL;
