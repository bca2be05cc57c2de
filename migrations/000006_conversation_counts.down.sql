DROP TRIGGER conversation_counts_move ON conversations;
DROP TRIGGER conversation_counts_delete ON conversations;
DROP TRIGGER conversation_counts_insert ON conversations;
DROP FUNCTION conversation_counts_move();
DROP FUNCTION conversation_counts_delete();
DROP FUNCTION conversation_counts_insert();
DROP TABLE conversation_counts;
