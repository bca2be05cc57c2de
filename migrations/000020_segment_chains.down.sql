CREATE OR REPLACE FUNCTION message_on_branch(conv uuid, leaf_segment integer, leaf_depth integer, seg integer, depth integer)
    RETURNS boolean LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
BEGIN
    RETURN EXISTS (
        WITH RECURSIVE chain(seg, hi) AS (
            SELECT leaf_segment, leaf_depth
            UNION ALL
            SELECT s.parent_segment, s.fork_depth FROM chain
            JOIN message_segments s ON s.conversation_id = conv AND s.segment = chain.seg
            WHERE s.parent_segment IS NOT NULL)
        SELECT 1 FROM chain WHERE chain.seg = message_on_branch.seg AND chain.hi >= message_on_branch.depth);
END $$;
DROP INDEX message_segments_fork_idx;
CREATE INDEX message_segments_fork_idx ON message_segments (conversation_id, parent_segment, fork_depth);
DROP TRIGGER message_segments_chain ON message_segments;
DROP FUNCTION message_segments_chain();
ALTER TABLE message_segments DROP COLUMN chain_from, DROP COLUMN chain;
