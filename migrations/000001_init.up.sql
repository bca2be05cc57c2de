-- Conversations and their messages. One row per message; a message's position is its
-- 1-based place in its conversation, assigned under the conversation's row lock in the
-- inserting transaction, so positions are gap-free and commit-ordered.
CREATE TABLE conversations (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    title         text        NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    last_position integer     NOT NULL DEFAULT 0 CHECK (last_position >= 0),
    message_count integer     NOT NULL DEFAULT 0 CHECK (message_count >= 0)
);

CREATE INDEX conversations_updated_idx ON conversations (updated_at DESC, id DESC);

-- schema_version 1 is the flat record of the first Parley (roles user/assistant/tool,
-- tool_calls, tool_results, tool_call_id in payload); version 2 is the typed payload, with
-- kind naming the variant. Readers upgrade version 1 rows transparently.
CREATE TABLE messages (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    conversation_id uuid        NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    position        integer     NOT NULL CHECK (position > 0),
    schema_version  smallint    NOT NULL DEFAULT 2 CHECK (schema_version IN (1, 2)),
    kind            text,
    role            text        NOT NULL,
    content         text        NOT NULL DEFAULT '',
    tool_calls      jsonb,
    tool_results    jsonb,
    payload         jsonb       NOT NULL DEFAULT '{}'::jsonb,
    source_id       text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (conversation_id, position),
    CONSTRAINT messages_role_check CHECK (
        (schema_version = 1 AND role IN ('user', 'assistant', 'tool'))
        OR (schema_version = 2 AND kind IS NOT NULL
            AND role IN ('user', 'assistant', 'supervisor', 'document', 'invocation', 'result'))
    )
);

-- An imported record's id, so that importing the same source again adds nothing.
CREATE UNIQUE INDEX messages_source_idx ON messages (conversation_id, source_id)
    WHERE source_id IS NOT NULL;

-- Every tool call id in a conversation, the message that made it and the result that
-- answered it: enforces unique call ids per conversation and links results to calls.
CREATE TABLE tool_calls (
    conversation_id   uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    call_id           text NOT NULL,
    name              text NOT NULL,
    request_id        uuid NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    result_id         uuid REFERENCES messages (id) ON DELETE SET NULL,
    PRIMARY KEY (conversation_id, call_id)
);
