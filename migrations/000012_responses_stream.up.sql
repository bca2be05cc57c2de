-- Live messages may be fed OpenAI Responses stream events (appendProviderEvents with
-- the format OPENAI_RESPONSES).
ALTER TABLE messages DROP CONSTRAINT messages_stream_format_check,
    ADD CONSTRAINT messages_stream_format_check
        CHECK (stream_format IN ('OPENAI_CHAT', 'ANTHROPIC_MESSAGES', 'OPENAI_RESPONSES'));
