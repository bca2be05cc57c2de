DROP TRIGGER conversation_list_change ON conversations;
DROP FUNCTION conversation_list_change();
DROP FUNCTION conversation_list_record(text, uuid, text);
DROP TABLE conversation_list;
ALTER TABLE conversation_counts DROP COLUMN list_seq;
