-- Search (issue 18): full-text search over an owner's messages, in Postgres.
--
-- Each message has a tsvector, search_vector, that a trigger computes from the columns
-- it is stored in, whatever wrote them (a mutation, COPY of an import, a streaming
-- message completing, processing resolving a file or recognizing an image). Its parts
-- are weighted: A the names (tool names, file paths, MCP resources), B the text (and a
-- tool's error message), C the details (tool arguments and outputs, a file's content,
-- an image's recognized text), D the thinking, which a search leaves out unless asked
-- (the query filters the vector to A-C). A message while it streams and a deleted one
-- (a tombstone) have none, so they are never found.
--
-- Identifiers and paths are found by their parts: Postgres's parser takes
-- internal/db/tree.go or example.com as one token, so a \x01 (a blank to the parser,
-- taken out of snippets) goes after every / . : and \ before parsing, and the query is
-- split the same way (db/search.go). snake_case is split by the parser itself.
--
-- The text search configuration is the setting search.config, stored here so that the
-- vectors and the queries always use the same one; the server changes it (and rebuilds
-- the vectors) at start when the setting differs (db.SetSearchConfig).
CREATE TABLE search_config (
    singleton boolean  PRIMARY KEY DEFAULT true CHECK (singleton),
    config    regconfig NOT NULL DEFAULT 'simple'
);
INSERT INTO search_config DEFAULT VALUES;

-- search_escape puts a raw text in the stored form of message text (html.EscapeString,
-- seed 001) as far as the parser cares: &, < and >. Stored text stays as it is, so that
-- "<script>" in a message is found by "script" (the parser skips entities, not the words
-- between them) and every part of a snippet has the same form.
CREATE FUNCTION search_escape(t text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN replace(replace(replace(t, '&', '&amp;'), '<', '&lt;'), '>', '&gt;');

-- search_split cuts a text to the first 100,000 characters searched (a tsvector holds at
-- most 1 MB) and splits paths and dotted names into their parts.
CREATE FUNCTION search_split(t text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN regexp_replace(left(t, 100000), '([/.:\\])', E'\\1\x01', 'g');

-- message_search_parts: what is searched in a message, by weight, in stored (escaped)
-- form. PL/pgSQL rather than SQL, here and below: Postgres (before 18) plans a SQL
-- function that it cannot inline on every call, which cost a save about a millisecond;
-- PL/pgSQL keeps its plans for the session.
CREATE FUNCTION message_search_parts(kind text, content text, payload jsonb, tool_calls jsonb, tool_results jsonb,
    OUT names text, OUT body text, OUT detail text, OUT thinking text)
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    CASE kind
    WHEN 'tool_request' THEN
        IF jsonb_typeof(tool_calls) = 'array' THEN
            SELECT string_agg(search_escape(c->>'name'), ' '),
                string_agg(search_escape(coalesce(c->>'argumentsRaw', c->>'arguments')), ' ')
            INTO names, detail FROM jsonb_array_elements(tool_calls) c;
        END IF;
        body := content;
    WHEN 'tool_result' THEN
        names := search_escape(tool_results->0->>'toolName');
        body := concat_ws(' ', content, search_escape(tool_results->0->'error'->>'message'));
        detail := search_escape(coalesce(tool_results->0->>'outputRaw', tool_results->0->>'output'));
    WHEN 'file_reference' THEN
        names := search_escape(payload->>'path');
        detail := search_escape(payload->'resolution'->>'Content');
    WHEN 'mcp_resource' THEN
        names := search_escape(concat_ws(' ', payload->>'serverName', payload->>'resourceUri'));
        body := content;
    WHEN 'image' THEN
        detail := search_escape(concat_ws(' ', payload->'recognition'->>'RecognizedText',
            payload->'recognition'->>'VisionAnalysis'));
    WHEN 'system_control' THEN
        NULL;
    ELSE
        body := content;
    END CASE;
    IF jsonb_typeof(payload->'parts') = 'array' THEN
        SELECT string_agg(p->>'content', ' ') INTO thinking
        FROM jsonb_array_elements(payload->'parts') p WHERE p->>'kind' = 'THINKING';
    END IF;
END $$;

-- message_search_vector: the weighted vector of a message's parts.
CREATE FUNCTION message_search_vector(cfg regconfig, kind text, content text, payload jsonb, tool_calls jsonb, tool_results jsonb)
    RETURNS tsvector LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    p record;
BEGIN
    p := message_search_parts(kind, content, payload, tool_calls, tool_results);
    RETURN setweight(to_tsvector(cfg, search_split(coalesce(p.names, ''))), 'A')
        || setweight(to_tsvector(cfg, search_split(coalesce(p.body, ''))), 'B')
        || setweight(to_tsvector(cfg, search_split(coalesce(p.detail, ''))), 'C')
        || setweight(to_tsvector(cfg, search_split(coalesce(p.thinking, ''))), 'D');
END $$;

-- message_search_document: the text a snippet is cut from, split as the vector's was.
CREATE FUNCTION message_search_document(kind text, content text, payload jsonb, tool_calls jsonb, tool_results jsonb, with_thinking boolean)
    RETURNS text LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    p record;
BEGIN
    p := message_search_parts(kind, content, payload, tool_calls, tool_results);
    RETURN search_split(concat_ws(E'\n', p.names, p.body, p.detail, CASE WHEN with_thinking THEN p.thinking END));
END $$;

ALTER TABLE messages ADD COLUMN search_vector tsvector;

CREATE FUNCTION messages_search_vector() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'streaming' OR NEW.deleted_at IS NOT NULL THEN
        NEW.search_vector := NULL;
    ELSE
        NEW.search_vector := message_search_vector((SELECT config FROM search_config), NEW.kind, NEW.content,
            NEW.payload, NEW.tool_calls, NEW.tool_results);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER messages_search_vector BEFORE INSERT OR UPDATE OF kind, content, payload, tool_calls, tool_results, status, deleted_at
    ON messages FOR EACH ROW EXECUTE FUNCTION messages_search_vector();

-- The messages stored before.
UPDATE messages SET search_vector = message_search_vector((SELECT config FROM search_config), kind, content,
    payload, tool_calls, tool_results)
WHERE status <> 'streaming' AND deleted_at IS NULL;

-- Partial: messages without a vector (streaming, deleted) cost the index nothing.
CREATE INDEX messages_search_idx ON messages USING gin (search_vector) WHERE search_vector IS NOT NULL;

-- message_on_branch: whether the message at (seg, depth) of a conversation is on the branch
-- ending at (leaf_segment, leaf_depth): its segment is on the chain of segments from the
-- leaf to the root (db/tree.go's chainSQL), at or before where the branch leaves it.
-- PL/pgSQL, so that a search's plan treats it as one call, not a recursive CTE inlined.
CREATE FUNCTION message_on_branch(conv uuid, leaf_segment integer, leaf_depth integer, seg integer, depth integer)
    RETURNS boolean LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
BEGIN
    RETURN EXISTS (
        WITH RECURSIVE chain(seg, hi) AS (
            SELECT leaf_segment, leaf_depth
            UNION ALL
            SELECT s.parent_segment, s.fork_depth FROM chain
            JOIN message_segments s ON s.conversation_id = conv AND s.segment = chain.seg
            WHERE s.parent_segment IS NOT NULL)
        SELECT 1 FROM chain WHERE chain.seg = message_on_branch.seg AND chain.hi >= message_on_branch.depth);
END $$;
