-- Search by owner (issue 18's benchmark targets). Messages now carry their
-- conversation's owner (an owner never changes: no statement moves a conversation or a
-- message), set by the search trigger when a message is inserted, whatever inserts it
-- (a mutation, an import's COPY, a stream, a fork's copy).
--
-- Two b-tree indexes on it, partial on the rows a search can find (a vector: not
-- streaming, not deleted), so that a message without one costs them nothing:
-- - messages_search_newest_idx on (owner, created_at, id): NEWEST of a common word walks
--   the owner's messages newest first and stops at the page, checking the words on each,
--   instead of reading and sorting every match (1.6 s for 47,632 matches);
-- - messages_search_tool_result_idx on a tool result's (owner, status, tool name): a
--   search filtered by them reads the owner's results of that status and tool, not every
--   match of its words.
-- The search index stays GIN (conversation_id, search_vector) (migration 000018): with
-- the owner in it (btree_gin), every scan of a heavy owner's matches decoded the
-- owner's whole posting list (half a million entries, 20 ms and more).
--
-- Filling the column rewrites every message (about 5 minutes for a million on a busy
-- 2-core machine, during which messages cannot be written); the indexes are built after.
ALTER TABLE messages ADD COLUMN owner text;

CREATE OR REPLACE FUNCTION messages_search_vector() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.owner := (SELECT owner FROM conversations WHERE id = NEW.conversation_id);
        -- A fork's copy brings its vector (migration 000019).
        IF NEW.search_vector IS NOT NULL THEN
            RETURN NEW;
        END IF;
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

CREATE INDEX messages_search_newest_idx ON messages (owner, created_at, id) WHERE search_vector IS NOT NULL;
CREATE INDEX messages_search_tool_result_idx ON messages (owner, (tool_results->0->>'status'), (tool_results->0->>'toolName'))
    WHERE kind = 'tool_result' AND search_vector IS NOT NULL;
