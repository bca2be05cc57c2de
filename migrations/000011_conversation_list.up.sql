-- The live list of each owner's conversations (subscription conversationsChanged). Every
-- change of a conversation that a list shows (created, renamed, its updated_at or
-- message_count moved by a message, deleted, moved to another owner) takes the owner's
-- next list number from its row of conversation_counts. The numbering runs in a
-- deferred constraint trigger, at commit, and the lock of the owner's row is held from
-- there to the end of the commit: so the numbers are in commit order (a reader that has
-- seen number n has seen every number below it, and resumes gap-free from a cursor),
-- while the owner's transactions queue on that row only for their commits, and take it
-- after every other lock they hold (no new deadlock). conversation_list keeps each
-- conversation's latest change, a deletion included (its tombstone).
ALTER TABLE conversation_counts ADD COLUMN list_seq bigint NOT NULL DEFAULT 0;

CREATE TABLE conversation_list (
    owner           text   NOT NULL,
    conversation_id uuid   NOT NULL,
    list_seq        bigint NOT NULL,
    list_change     text   NOT NULL CHECK (list_change IN ('created', 'renamed', 'bumped', 'deleted')),
    changed_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, conversation_id)
);
CREATE INDEX conversation_list_seq ON conversation_list (owner, list_seq);

-- Conversations stored before: listed, with number 0 (before any cursor).
INSERT INTO conversation_list (owner, conversation_id, list_seq, list_change)
SELECT owner, id, 0, 'created' FROM conversations;

CREATE FUNCTION conversation_list_record(o text, conv uuid, change text) RETURNS void LANGUAGE sql AS $$
    WITH seq AS (
        INSERT INTO conversation_counts AS c (owner, conversations, list_seq) VALUES (o, 0, 1)
        ON CONFLICT (owner) DO UPDATE SET list_seq = c.list_seq + 1
        RETURNING list_seq
    )
    INSERT INTO conversation_list AS l (owner, conversation_id, list_seq, list_change, changed_at)
    SELECT o, conv, seq.list_seq, change, now() FROM seq
    ON CONFLICT (owner, conversation_id) DO UPDATE
        SET list_seq = excluded.list_seq, list_change = excluded.list_change, changed_at = excluded.changed_at
$$;

CREATE FUNCTION conversation_list_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM conversation_list_record(OLD.owner, OLD.id, 'deleted');
    ELSIF TG_OP = 'INSERT' THEN
        PERFORM conversation_list_record(NEW.owner, NEW.id, 'created');
    ELSIF NEW.owner IS DISTINCT FROM OLD.owner THEN
        PERFORM conversation_list_record(OLD.owner, OLD.id, 'deleted');
        PERFORM conversation_list_record(NEW.owner, NEW.id, 'created');
    ELSIF NEW.title IS DISTINCT FROM OLD.title THEN
        PERFORM conversation_list_record(NEW.owner, NEW.id, 'renamed');
    ELSIF NEW.updated_at IS DISTINCT FROM OLD.updated_at OR NEW.message_count IS DISTINCT FROM OLD.message_count THEN
        PERFORM conversation_list_record(NEW.owner, NEW.id, 'bumped');
        RETURN NULL; -- message events already wake the owner's subscribers
    ELSE
        RETURN NULL; -- nothing a list shows changed
    END IF;
    IF TG_OP <> 'DELETE' THEN
        -- Creations and renames come with no message event: wake the owner's subscribers.
        PERFORM pg_notify('parley_messages', json_build_object('k', 'listed', 'c', NEW.id::text, 'o', NEW.owner)::text);
    END IF;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER conversation_list_change AFTER INSERT OR UPDATE OR DELETE ON conversations
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION conversation_list_change();
