DROP TRIGGER conversation_list_delete ON conversations;
DROP TRIGGER conversation_list_change ON conversations;
DROP FUNCTION conversation_list_delete();
DROP FUNCTION conversation_list_change();
DROP FUNCTION conversation_list_next(text);
DROP TABLE conversation_tombstones;
DROP INDEX conversations_owner_list_seq;
ALTER TABLE conversations DROP COLUMN list_change, DROP COLUMN list_seq;
ALTER TABLE conversation_counts DROP COLUMN list_seq;
