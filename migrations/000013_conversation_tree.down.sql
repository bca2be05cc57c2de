-- Back to one line per conversation: only the active branch's messages can stay, at
-- their depth... but positions are the store's sequence, so the other branches' rows
-- would leave gaps. Refuse unless every conversation is a single branch.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM message_segments) THEN
        RAISE EXCEPTION 'cannot migrate down: some conversations have branches';
    END IF;
END $$;
ALTER TABLE conversations DROP COLUMN forked_from, DROP COLUMN segments, DROP COLUMN active_depth, DROP COLUMN active_segment;
DROP INDEX messages_branch_idx;
DROP TRIGGER messages_linear_depth ON messages;
DROP FUNCTION messages_linear_depth();
ALTER TABLE messages DROP COLUMN deleted_at, DROP COLUMN hidden, DROP COLUMN depth, DROP COLUMN segment;
DROP TABLE message_segments;
