DROP TRIGGER messages_bytes_bound_update ON messages;
DROP TRIGGER messages_bytes_bound ON messages;
DROP FUNCTION messages_bytes_bound();
ALTER TABLE conversations DROP COLUMN max_message_bytes;
