-- An upper bound of the size of every message a conversation reads (body_bytes, 000017),
-- kept on its row, so that a page read can tell in its statement that it fits the byte
-- budget without summing it: a page of n rows fits when n * max_message_bytes is within
-- the budget, and is then read without the running sum's window (db/pages.go,
-- linePageSQL), a quarter of Postgres's time for a page of 100.
--
-- It only grows (a message deleted or shrunk leaves it as it was): it is a bound, not
-- the maximum. Triggers keep it on every write that creates or grows a message, whatever
-- the statement: saves, the group commit, an import's COPY and its insert from the
-- staging table, streaming messages' inserts and finishes, edits, a fork made real
-- (materialize_fork inserts its shared rows). A linked fork's shared rows are another
-- conversation's: the fork starts with the bound of the conversations its link names
-- (db.ForkConversation), which covers them, since a shared row never changes while it is
-- shared (the fork is made real first).
ALTER TABLE conversations ADD COLUMN max_message_bytes integer NOT NULL DEFAULT 0;

-- Inserts, one statement at a time (a COPY of 100,000 rows runs this once per batch):
-- one update per conversation whose bound the new rows pass, none otherwise.
CREATE FUNCTION messages_bytes_bound() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE conversations c SET max_message_bytes = n.bytes
    FROM (SELECT conversation_id, max(body_bytes) AS bytes FROM added GROUP BY conversation_id) n
    WHERE c.id = n.conversation_id AND c.max_message_bytes < n.bytes;
    RETURN NULL;
END $$;

-- Updates that grow a message: row by row, since a transition table cannot go with a
-- column list, and most updates of messages (leases, stream numbers, change numbers,
-- search vectors) change none of the columns body_bytes counts.
CREATE FUNCTION messages_bytes_bound_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE conversations SET max_message_bytes = NEW.body_bytes
    WHERE id = NEW.conversation_id AND max_message_bytes < NEW.body_bytes;
    RETURN NULL;
END $$;

CREATE TRIGGER messages_bytes_bound AFTER INSERT ON messages
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION messages_bytes_bound();
CREATE TRIGGER messages_bytes_bound_update AFTER UPDATE OF conversation_id, content, tool_calls, tool_results, payload, provenance
    ON messages FOR EACH ROW
    WHEN (NEW.body_bytes > OLD.body_bytes OR NEW.conversation_id IS DISTINCT FROM OLD.conversation_id)
    EXECUTE FUNCTION messages_bytes_bound_row();

-- The messages stored before.
UPDATE conversations c SET max_message_bytes = m.bytes
FROM (SELECT conversation_id, max(body_bytes) AS bytes FROM messages GROUP BY conversation_id) m
WHERE c.id = m.conversation_id;
-- Linked forks: the bound of the conversations holding their shared rows as well.
UPDATE conversations f SET max_message_bytes = l.bytes
FROM (SELECT p.conversation_id, max(c.max_message_bytes) AS bytes
    FROM fork_paths p CROSS JOIN LATERAL unnest(p.convs) AS u(conv) JOIN conversations c ON c.id = u.conv
    GROUP BY p.conversation_id) l
WHERE f.id = l.conversation_id AND f.max_message_bytes < l.bytes;
