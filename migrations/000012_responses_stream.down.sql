-- Messages fed OpenAI Responses events forget their format: one still streaming can no
-- longer take events after the downgrade (its appends so far are kept, and it ends as
-- any other).
UPDATE messages SET stream_format = NULL WHERE stream_format = 'OPENAI_RESPONSES';
ALTER TABLE messages DROP CONSTRAINT messages_stream_format_check,
    ADD CONSTRAINT messages_stream_format_check
        CHECK (stream_format IN ('OPENAI_CHAT', 'ANTHROPIC_MESSAGES'));
