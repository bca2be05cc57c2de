DROP INDEX IF EXISTS messages_change_seq_idx;
ALTER TABLE messages DROP COLUMN IF EXISTS change_seq;
ALTER TABLE conversations DROP COLUMN IF EXISTS change_seq;
