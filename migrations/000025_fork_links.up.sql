-- Copy-free forks (issue 16). A fork no longer copies the path it was forked at: its
-- depths 1..base_depth are another conversation's rows, named by a link on the fork's
-- row, and only the messages added to the fork are its own rows (segment 0 from
-- base_depth + 1, positions likewise). The link is flattened: a list of entries, each a
-- segment of a conversation holding real rows (never a linked fork's shared part), the
-- first one covering depths (0, link_from[2]], entry i the depths (link_from[i],
-- link_from[i + 1]], the last up to base_depth. A fork of a fork gets its source's
-- entries cut at its depth, so a reader follows one list, never a chain of links.
--
-- In a fork, a shared row's message id is derived from the fork's number and the depth
-- (fork_message_id, a UUID of version 8: real rows are version 4 or 7), so each
-- conversation's messages keep ids of their own and a derived id names exactly one
-- message. The fork is made real (its shared rows copied under their derived ids, its
-- link cleared: db.materializeFork) before anything changes a shared row or the fork's
-- part of it, which is rare: reading, exporting, counting and continuing a fork never do.
ALTER TABLE conversations
    ADD COLUMN fork_no bigint UNIQUE,
    ADD COLUMN base_depth integer NOT NULL DEFAULT 0 CHECK (base_depth >= 0 AND (base_depth = 0 OR fork_no IS NOT NULL));

-- A fork of a fork at a message the latter shares names a message by its derived id,
-- which has no row: forked_from is no longer a foreign key. Deleting a conversation
-- clears the forked_from of the forks made from its messages (db.DeleteConversation), as
-- the key's ON DELETE SET NULL did.
ALTER TABLE conversations DROP CONSTRAINT conversations_forked_from_fkey;

-- The link itself, in a table of its own (a linked fork's row here): the conversations
-- row stays as narrow as it was, which its plans depend on while it is not analyzed.
CREATE TABLE fork_paths (
    conversation_id uuid PRIMARY KEY REFERENCES conversations (id) ON DELETE CASCADE,
    convs uuid[] NOT NULL,
    segs integer[] NOT NULL,
    froms integer[] NOT NULL,
    CHECK (cardinality(convs) > 0 AND cardinality(convs) = cardinality(segs) AND cardinality(segs) = cardinality(froms))
);

CREATE SEQUENCE conversations_fork_no_seq AS bigint MAXVALUE 281474976710655 OWNED BY conversations.fork_no;

-- The forks that share each conversation's rows: what must be made real before one of
-- them changes, or the conversation goes. A conversation with forks on it cannot be
-- deleted before they are made real (the foreign key says so loudly if a writer forgets).
CREATE TABLE fork_links (
    base uuid NOT NULL REFERENCES conversations (id),
    fork uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    PRIMARY KEY (base, fork)
);
CREATE INDEX fork_links_fork_idx ON fork_links (fork);

-- The linked forks of an owner: what a search makes real first.
CREATE INDEX conversations_linked_idx ON conversations (owner) WHERE base_depth > 0;

-- A conversation's streaming messages, which a fork's path must not hold: a probe,
-- whatever the path's length.
CREATE INDEX messages_streaming_idx ON messages (conversation_id, segment, depth) WHERE status = 'streaming';

-- The id of the shared message at depth of the fork numbered fork_no: 48 bits of the
-- number, the version (8), 12 bits of the depth, the variant (8) and 12 more bits of
-- the depth, then the depth's last 8 bits and ten zeros.
CREATE FUNCTION fork_message_id(fork_no bigint, depth integer) RETURNS uuid
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (lpad(to_hex(fork_no), 12, '0') || '8' || lpad(to_hex((depth >> 20) & 4095), 3, '0')
        || '8' || lpad(to_hex((depth >> 8) & 4095), 3, '0') || lpad(to_hex(depth & 255), 2, '0') || '0000000000')::uuid;

-- The entries of a link as rows: each a segment of a conversation and its depths (lo, hi].
CREATE FUNCTION link_entries(convs uuid[], segs integer[], froms integer[], base_depth integer)
    RETURNS TABLE (conv uuid, seg integer, lo integer, hi integer, j bigint)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT k.conv, k.seg, k.lo, coalesce(lead(k.lo) OVER (ORDER BY k.j), base_depth), k.j
    FROM unnest(convs, segs, froms) WITH ORDINALITY AS k(conv, seg, lo, j)
$$;

-- The entries of the link of the fork f, which shares its depths 1..base_depth.
CREATE FUNCTION fork_link_entries(f uuid, base_depth integer)
    RETURNS TABLE (conv uuid, seg integer, lo integer, hi integer, j bigint)
    LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT e.* FROM fork_paths p, link_entries(p.convs, p.segs, p.froms, base_depth) e WHERE p.conversation_id = f
$$;

-- Makes the linked fork f real: its shared rows copied in as its own (segment 0, their
-- depths as positions, their derived ids, their search vectors and the fork's owner, so
-- the search trigger has nothing to do: 000023), with the tool calls of the shared
-- requests (a result on the path paired as in the source), and its link cleared. The
-- fork's row is locked first, so two callers copy once. Returns the rows copied.
-- db.materializeFork calls it before anything changes what the fork shares, and the
-- down migration for every fork still linked.
CREATE FUNCTION materialize_fork(f uuid) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    c conversations%ROWTYPE;
    n integer;
BEGIN
    SELECT * INTO c FROM conversations WHERE id = f FOR UPDATE;
    IF NOT FOUND OR c.base_depth = 0 THEN
        RETURN 0;
    END IF;
    INSERT INTO messages (id, conversation_id, position, segment, depth, schema_version, kind, role, content,
            tool_calls, tool_results, payload, source_id, created_at, updated_at, status, status_reason,
            client_message_id, body_digest, provenance, stream_seq, hidden, deleted_at, search_vector, owner)
        SELECT fork_message_id(c.fork_no, m.depth), f, m.depth, 0, m.depth, m.schema_version, m.kind, m.role, m.content,
            m.tool_calls, m.tool_results, m.payload, m.source_id, m.created_at, m.updated_at, m.status, m.status_reason,
            m.client_message_id, m.body_digest, m.provenance, m.stream_seq, m.hidden, m.deleted_at, m.search_vector, c.owner
        FROM fork_link_entries(c.id, c.base_depth) l
        JOIN messages m ON m.conversation_id = l.conv AND m.segment = l.seg AND m.depth > l.lo AND m.depth <= l.hi;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n <> c.base_depth THEN
        RAISE EXCEPTION 'fork % shares % messages, found % of them', f, c.base_depth, n USING ERRCODE = 'data_corrupted';
    END IF;
    WITH l AS MATERIALIZED (SELECT * FROM fork_link_entries(c.id, c.base_depth))
    INSERT INTO tool_calls (conversation_id, call_id, name, request_id, result_id, approval_status, decided_at, imported)
        SELECT f, t.call_id, t.name, fork_message_id(c.fork_no, rq.depth),
            CASE WHEN EXISTS (SELECT 1 FROM l r WHERE r.conv = rs.conversation_id AND r.seg = rs.segment
                    AND rs.depth > r.lo AND rs.depth <= r.hi)
                THEN fork_message_id(c.fork_no, rs.depth) END,
            t.approval_status, t.decided_at, t.imported
        FROM (SELECT DISTINCT conv FROM l) lc
        JOIN tool_calls t ON t.conversation_id = lc.conv
        JOIN messages rq ON rq.id = t.request_id
        JOIN l ON l.conv = rq.conversation_id AND l.seg = rq.segment AND rq.depth > l.lo AND rq.depth <= l.hi
        LEFT JOIN messages rs ON rs.id = t.result_id;
    UPDATE conversations SET base_depth = 0 WHERE id = f;
    DELETE FROM fork_paths WHERE conversation_id = f;
    DELETE FROM fork_links WHERE fork = f;
    RETURN n;
END $$;
