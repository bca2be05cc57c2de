-- Owners: every conversation belongs to one, and requests see their owner's only.
-- Conversations stored before owners existed belong to the local owner, who is the one
-- a server without authentication acts for.
ALTER TABLE conversations ADD COLUMN owner text NOT NULL DEFAULT 'local'
    CHECK (owner <> '' AND octet_length(owner) <= 200);

-- The conversations list of one owner, most recently updated first.
DROP INDEX conversations_updated_idx;
CREATE INDEX conversations_owner_updated_idx ON conversations (owner, updated_at DESC, id DESC);

-- API tokens: the SHA-256 of the token, never the token. Tokens are 32 random bytes,
-- so a fast hash is right here (nothing to brute-force, unlike a password), and it
-- lets the hash be the lookup key.
CREATE TABLE api_tokens (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    owner        text        NOT NULL CHECK (owner <> '' AND octet_length(owner) <= 200),
    name         text        NOT NULL DEFAULT '',
    token_sha256 bytea       NOT NULL UNIQUE CHECK (octet_length(token_sha256) = 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    expires_at   timestamptz,
    revoked_at   timestamptz
);

CREATE INDEX api_tokens_owner_idx ON api_tokens (owner, created_at DESC);
