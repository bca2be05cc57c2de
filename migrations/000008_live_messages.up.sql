-- Live messages: a message may be stored while it streams, then end COMPLETED,
-- ABORTED, FAILED or INTERRUPTED. Every message stored before is COMPLETED.
ALTER TABLE messages
    ADD COLUMN status text NOT NULL DEFAULT 'completed'
        CHECK (status IN ('streaming', 'completed', 'aborted', 'failed', 'interrupted')),
    ADD COLUMN status_reason text CHECK (octet_length(status_reason) <= 4000),
    -- The client's id for the message: the same id again in the conversation is the
    -- same message. body_digest is the SHA-256 of the message as prepared, to tell a
    -- retry from a different message under the same id.
    ADD COLUMN client_message_id text
        CHECK (client_message_id <> '' AND octet_length(client_message_id) <= 200),
    ADD COLUMN body_digest bytea,
    -- Who produced it: provider, model, response id, finish reason, usage, timings.
    ADD COLUMN provenance jsonb,
    -- While it streams: the number of the last acknowledged append, the format of the
    -- provider's events when it is fed them, when the first delta came, and when the
    -- message is closed as interrupted unless its writer appends or beats first.
    ADD COLUMN stream_seq integer NOT NULL DEFAULT 0 CHECK (stream_seq >= 0),
    ADD COLUMN stream_format text CHECK (stream_format IN ('OPENAI_CHAT', 'ANTHROPIC_MESSAGES')),
    ADD COLUMN lease_seconds integer,
    ADD COLUMN first_delta_at timestamptz,
    ADD COLUMN lease_until timestamptz,
    ADD CONSTRAINT messages_streaming_lease CHECK (status <> 'streaming' OR lease_until IS NOT NULL);

CREATE UNIQUE INDEX messages_client_id_idx ON messages (conversation_id, client_message_id)
    WHERE client_message_id IS NOT NULL;

-- The sweeper's scan: streaming messages whose lease ran out.
CREATE INDEX messages_lease_idx ON messages (lease_until) WHERE status = 'streaming';

-- The appends of a streaming message, one row per acknowledged append: its deltas
-- (parley.Delta as JSON) and, when it brought the provider's own events, those events,
-- so that any replica can rebuild the SDK's accumulator. Folded into the message and
-- deleted when it ends.
CREATE TABLE message_deltas (
    message_id uuid    NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    seq        integer NOT NULL CHECK (seq > 0),
    deltas     jsonb   NOT NULL,
    events     jsonb,
    PRIMARY KEY (message_id, seq)
);
