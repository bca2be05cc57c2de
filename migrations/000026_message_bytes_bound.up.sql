-- An upper bound of the size of every message a conversation reads (body_bytes, 000017),
-- kept on its row, so that a page read can tell in its statement that it fits the byte
-- budget without summing it: a page of n rows fits when n * max_message_bytes is within
-- the budget, and is then read without the running sum's window (db/pages.go,
-- fittingLinePageSQL), a quarter of Postgres's time for a page of 100.
--
-- The bound starts at 16 KiB, which every message up to that size is within: only a
-- larger message moves it, so only a larger message's write runs the triggers below,
-- and a save of an ordinary message, or an import's insert of thousands, pays their
-- WHEN alone. (A statement-level trigger with a transition table, run on every insert,
-- cost a save 0.04-0.07 ms of Postgres's 0.4 in pgbench.) A page of up to 1,000
-- messages of at most 16 KiB fits the default budget of 16 MiB.
--
-- It only grows (a message deleted or shrunk leaves it as it was): it is a bound, not
-- the maximum. The triggers keep it on every write that creates or grows a message,
-- whatever the statement: saves, the group commit, an import's insert from its staging
-- table, streaming messages' inserts, appends and ends, edits, a fork made real
-- (materialize_fork inserts its shared rows). A linked fork's shared rows are another
-- conversation's: the fork starts with the bound of the conversations its link names
-- (db.ForkConversation), which covers them, since a shared row never changes while it is
-- shared (the fork is made real first).
ALTER TABLE conversations ADD COLUMN max_message_bytes integer NOT NULL DEFAULT 16384;

CREATE FUNCTION messages_bytes_bound() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE conversations SET max_message_bytes = NEW.body_bytes
    WHERE id = NEW.conversation_id AND max_message_bytes < NEW.body_bytes;
    RETURN NULL;
END $$;

-- Both WHENs name the starting bound (the column's default): a message within it needs
-- no update.
CREATE TRIGGER messages_bytes_bound AFTER INSERT ON messages
    FOR EACH ROW WHEN (NEW.body_bytes > 16384) EXECUTE FUNCTION messages_bytes_bound();
CREATE TRIGGER messages_bytes_bound_update AFTER UPDATE OF conversation_id, content, tool_calls, tool_results, payload, provenance
    ON messages FOR EACH ROW
    WHEN (NEW.body_bytes > 16384 AND (NEW.body_bytes > OLD.body_bytes OR NEW.conversation_id IS DISTINCT FROM OLD.conversation_id))
    EXECUTE FUNCTION messages_bytes_bound();

-- The messages stored before.
UPDATE conversations c SET max_message_bytes = m.bytes
FROM (SELECT conversation_id, max(body_bytes) AS bytes FROM messages GROUP BY conversation_id) m
WHERE c.id = m.conversation_id AND c.max_message_bytes < m.bytes;
-- Linked forks: the bound of the conversations holding their shared rows as well.
UPDATE conversations f SET max_message_bytes = l.bytes
FROM (SELECT p.conversation_id, max(c.max_message_bytes) AS bytes
    FROM fork_paths p CROSS JOIN LATERAL unnest(p.convs) AS u(conv) JOIN conversations c ON c.id = u.conv
    GROUP BY p.conversation_id) l
WHERE f.id = l.conversation_id AND f.max_message_bytes < l.bytes;
