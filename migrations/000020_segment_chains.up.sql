-- Each segment's row carries its chain: the segments of the branch from the root to it
-- (chain, root first, ending with itself) and where the branch enters each one
-- (chain_from: its fork depth, 0 for segment 0 and for a root's segment). Along a branch
-- ending in segment S, chain[i] holds the depths (chain_from[i], chain_from[i+1]], the
-- last one up to the leaf. Whether a message is on a branch, and which segments a page
-- of a branch touches, are then one probe of message_segments' primary key for the
-- leaf's segment, whatever the number of forks on the branch; walking the chain
-- (000013's recursive CTE) took one probe per fork, 100 for a branch of 100 forks, on
-- every message added under a named parent and every page read.
--
-- The cost is storage: 8 bytes per segment of a chain, in each segment's row; a branch
-- of k forks holds about 4·k² bytes in all (40 KB for 100 forks, 4 MB for 1,000).
--
-- A trigger fills them in from the parent segment's row, whoever inserts the segment
-- (a replica of the previous version during a rolling upgrade too): segments are never
-- changed once inserted, and a parent is inserted before its children. Segment 0 has no
-- row; its chain is {0}, from {0}.
ALTER TABLE message_segments ADD COLUMN chain integer[], ADD COLUMN chain_from integer[];

CREATE FUNCTION message_segments_chain() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.parent_segment IS NULL THEN
        NEW.chain := ARRAY[NEW.segment];
        NEW.chain_from := ARRAY[0];
    ELSIF NEW.parent_segment = 0 THEN
        NEW.chain := ARRAY[0, NEW.segment];
        NEW.chain_from := ARRAY[0, NEW.fork_depth];
    ELSE
        SELECT p.chain || NEW.segment, p.chain_from || NEW.fork_depth INTO NEW.chain, NEW.chain_from
        FROM message_segments p WHERE p.conversation_id = NEW.conversation_id AND p.segment = NEW.parent_segment;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'segment % of conversation % forks from segment %, which does not exist',
                NEW.segment, NEW.conversation_id, NEW.parent_segment USING ERRCODE = 'foreign_key_violation';
        END IF;
    END IF;
    RETURN NEW;
END $$;

-- The segments stored so far, parents before children.
WITH RECURSIVE c(conversation_id, segment, chain, chain_from) AS (
    SELECT conversation_id, segment,
        CASE WHEN parent_segment IS NULL THEN ARRAY[segment] ELSE ARRAY[0, segment] END,
        CASE WHEN parent_segment IS NULL THEN ARRAY[0] ELSE ARRAY[0, fork_depth] END
    FROM message_segments WHERE parent_segment IS NULL OR parent_segment = 0
    UNION ALL
    SELECT s.conversation_id, s.segment, c.chain || s.segment, c.chain_from || s.fork_depth
    FROM c JOIN message_segments s ON s.conversation_id = c.conversation_id AND s.parent_segment = c.segment
)
UPDATE message_segments s SET chain = c.chain, chain_from = c.chain_from
FROM c WHERE s.conversation_id = c.conversation_id AND s.segment = c.segment;

ALTER TABLE message_segments ALTER COLUMN chain SET NOT NULL, ALTER COLUMN chain_from SET NOT NULL,
    ADD CONSTRAINT message_segments_chain_check
        CHECK (cardinality(chain) = cardinality(chain_from) AND chain[cardinality(chain)] = segment);

CREATE TRIGGER message_segments_chain BEFORE INSERT ON message_segments
    FOR EACH ROW EXECUTE FUNCTION message_segments_chain();

-- The forks below a message (000013's message_segments_fork_idx), with the fork depth
-- first: an index that leads with conversation_id alone tied, on stale statistics, with
-- the primary key for a probe of one segment's row, and Postgres took it and filtered
-- every segment of the conversation. Sibling lookups give all three columns.
DROP INDEX message_segments_fork_idx;
CREATE INDEX message_segments_fork_idx ON message_segments (fork_depth, conversation_id, parent_segment);

-- message_on_branch (000016, search) by the leaf's chain: one probe. Still PL/pgSQL, so
-- that a search's plan treats it as one call.
CREATE OR REPLACE FUNCTION message_on_branch(conv uuid, leaf_segment integer, leaf_depth integer, seg integer, depth integer)
    RETURNS boolean LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
BEGIN
    IF depth > leaf_depth THEN
        RETURN false;
    ELSIF seg = leaf_segment THEN
        RETURN true;
    END IF;
    RETURN coalesce((SELECT s.chain_from[array_position(s.chain, message_on_branch.seg) + 1] >= message_on_branch.depth
        FROM message_segments s WHERE s.conversation_id = conv AND s.segment = leaf_segment
        ), false);
END $$;
