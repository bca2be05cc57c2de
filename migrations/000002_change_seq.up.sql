-- Realtime updates: every change to a stored message takes the next number of its
-- conversation's change sequence, under the conversation's row lock in the changing
-- transaction, so the numbers are gap-free and commit-ordered (unlike updated_at, which
-- is the transaction's start time). A messageUpdated subscriber remembers the last
-- number it delivered and, after any wake-up or a lost notification, reads the messages
-- whose change_seq is greater: nothing is missed, nothing repeated.
ALTER TABLE conversations ADD COLUMN change_seq bigint NOT NULL DEFAULT 0 CHECK (change_seq >= 0);

-- NULL until the message first changes after it was added.
ALTER TABLE messages ADD COLUMN change_seq bigint;

CREATE INDEX messages_change_seq_idx ON messages (conversation_id, change_seq)
    WHERE change_seq IS NOT NULL;
