ALTER TABLE messages DROP COLUMN body_bytes;
