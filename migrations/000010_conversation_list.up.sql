-- The live list of each owner's conversations (subscription conversationsChanged). Every
-- change of a conversation that a list shows (created, renamed, its updated_at moved by
-- a message, deleted) takes the owner's next list number, under the lock of the owner's
-- row of conversation_counts held to commit, so the numbers are in commit order: a
-- reader that has seen number n has seen every number below it, and resumes gap-free
-- from a cursor. A conversation keeps the number of its latest change (list_seq,
-- list_change); a deleted one leaves a tombstone with the number of its deletion.
-- Triggers, so that every writer (the API, imports, processing, live messages) numbers
-- its changes. The owner's writes that change the list queue on that row for the rest
-- of their transactions (message appends to a streaming message do not: they leave
-- updated_at alone).
ALTER TABLE conversation_counts ADD COLUMN list_seq bigint NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN list_seq bigint NOT NULL DEFAULT 0,
    ADD COLUMN list_change text NOT NULL DEFAULT 'created'
        CHECK (list_change IN ('created', 'renamed', 'bumped'));
CREATE INDEX conversations_owner_list_seq ON conversations (owner, list_seq);

CREATE TABLE conversation_tombstones (
    owner      text        NOT NULL,
    list_seq   bigint      NOT NULL,
    id         uuid        NOT NULL,
    deleted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, list_seq)
);

CREATE FUNCTION conversation_list_next(o text) RETURNS bigint LANGUAGE sql AS $$
    INSERT INTO conversation_counts AS c (owner, conversations, list_seq) VALUES (o, 0, 1)
    ON CONFLICT (owner) DO UPDATE SET list_seq = c.list_seq + 1
    RETURNING list_seq
$$;

CREATE FUNCTION conversation_list_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.list_change := 'created';
    ELSIF NEW.owner IS DISTINCT FROM OLD.owner THEN
        -- Gone from one owner's list, new in the other's.
        INSERT INTO conversation_tombstones (owner, list_seq, id) VALUES (OLD.owner, conversation_list_next(OLD.owner), OLD.id);
        NEW.list_change := 'created';
    ELSIF NEW.title IS DISTINCT FROM OLD.title THEN
        NEW.list_change := 'renamed';
    ELSIF NEW.updated_at IS DISTINCT FROM OLD.updated_at OR NEW.message_count IS DISTINCT FROM OLD.message_count THEN
        NEW.list_change := 'bumped';
    ELSE
        RETURN NEW; -- nothing a list shows changed
    END IF;
    NEW.list_seq := conversation_list_next(NEW.owner);
    IF NEW.list_change <> 'bumped' THEN
        -- Message events already wake the owner's subscribers; these do not come with one.
        PERFORM pg_notify('parley_messages', json_build_object('k', 'listed', 'c', NEW.id::text, 'o', NEW.owner)::text);
    END IF;
    RETURN NEW;
END $$;

CREATE FUNCTION conversation_list_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO conversation_tombstones (owner, list_seq, id) VALUES (OLD.owner, conversation_list_next(OLD.owner), OLD.id);
    RETURN NULL;
END $$;

CREATE TRIGGER conversation_list_change BEFORE INSERT OR UPDATE ON conversations
    FOR EACH ROW EXECUTE FUNCTION conversation_list_change();
CREATE TRIGGER conversation_list_delete AFTER DELETE ON conversations
    FOR EACH ROW EXECUTE FUNCTION conversation_list_delete();
