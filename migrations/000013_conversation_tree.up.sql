-- Conversation trees. A message has a parent (the message before it on its branch), and
-- a second child of a message starts a new branch. The tree is stored as segments: a
-- segment is a run of messages without a fork, numbered within its conversation; a
-- message is at (segment, depth), its depth being its place along its branch (1 for a
-- root). Segment 0 of every conversation is implicit (no row): it starts at the root.
-- Every other segment has a row saying where it forks: after the message at
-- (parent_segment, fork_depth), or at the root when parent_segment is NULL. A branch is
-- then a short chain of segments (one per fork on its path), and a page along it is one
-- index range on (conversation_id, segment, depth) per segment of the chain, whatever
-- the size of the tree.
--
-- messages.position keeps its meaning for the store: the conversation-wide, gap-free,
-- commit-ordered number that realtime replay follows. What the API calls a message's
-- position is its depth.
CREATE TABLE message_segments (
    conversation_id uuid    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    segment         integer NOT NULL CHECK (segment > 0),
    parent_segment  integer CHECK (parent_segment >= 0),
    fork_depth      integer NOT NULL CHECK (fork_depth >= 0),
    PRIMARY KEY (conversation_id, segment),
    CHECK ((parent_segment IS NULL) = (fork_depth = 0))
);

-- The forks below a message: sibling lookups.
CREATE INDEX message_segments_fork_idx ON message_segments (conversation_id, parent_segment, fork_depth);

-- Every message stored so far is on its conversation's one branch, segment 0, at the
-- depth of its position.
ALTER TABLE messages
    ADD COLUMN segment integer NOT NULL DEFAULT 0 CHECK (segment >= 0),
    ADD COLUMN depth integer;
UPDATE messages SET depth = position;
ALTER TABLE messages ALTER COLUMN depth SET NOT NULL,
    ADD CONSTRAINT messages_depth_check CHECK (depth > 0);

-- A writer that does not know the tree (a replica of the previous version during a
-- rolling upgrade) inserts no depth: its message goes on the single line, at the depth
-- of its position.
CREATE FUNCTION messages_linear_depth() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.depth := NEW.position;
    RETURN NEW;
END $$;
CREATE TRIGGER messages_linear_depth BEFORE INSERT ON messages
    FOR EACH ROW WHEN (NEW.depth IS NULL) EXECUTE FUNCTION messages_linear_depth();

CREATE UNIQUE INDEX messages_branch_idx ON messages (conversation_id, segment, depth);

-- A hidden message stays in the history and the UI but is never sent to an LLM; a
-- deleted one is a tombstone: its content erased, its place in the tree kept.
ALTER TABLE messages
    ADD COLUMN hidden boolean NOT NULL DEFAULT false,
    ADD COLUMN deleted_at timestamptz;

-- The active branch, by its leaf's place (the leaf is always the last message of its
-- segment), and how many segments the conversation has (the next one's number less one).
-- A conversation without segments is one line whose leaf is its last message: readers
-- take last_position as its active depth (leafDepth in db/tree.go), so that writers that
-- do not know the tree keep it right.
ALTER TABLE conversations
    ADD COLUMN active_segment integer NOT NULL DEFAULT 0 CHECK (active_segment >= 0),
    ADD COLUMN active_depth integer NOT NULL DEFAULT 0 CHECK (active_depth >= 0),
    ADD COLUMN segments integer NOT NULL DEFAULT 0 CHECK (segments >= 0);

-- A conversation forked from another: the message it was forked at (its history is a
-- copy of the path to it). Indexed for the foreign key's check when messages go.
ALTER TABLE conversations ADD COLUMN forked_from uuid REFERENCES messages (id) ON DELETE SET NULL;
CREATE INDEX conversations_forked_from_idx ON conversations (forked_from) WHERE forked_from IS NOT NULL;

-- Conversations stored before are one line each, whose active depth is their last
-- position. This update comes after every change to the conversations table: it queues
-- events of the deferred trigger conversation_list_change (000011_conversation_list),
-- and Postgres refuses to ALTER a table with trigger events pending.
UPDATE conversations SET active_depth = last_position WHERE last_position > 0;
