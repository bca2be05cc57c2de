-- An import's search vectors, computed for a batch in one statement (issue 15 §1).
-- The search trigger (000016, 000022, 000023) computes a message's vector with three
-- PL/pgSQL calls a row (the trigger, message_search_vector, message_search_parts), each
-- running its own statements (the configuration, the tool calls' names, the thinking):
-- for an import's COPY of 100,000 messages that was about a third of Postgres's CPU,
-- where to_tsvector itself is a small part. An import now copies a batch into a
-- temporary table and inserts it into messages with its vectors and owner given, which
-- the insert trigger's WHEN (000023) then skips: the vectors come from the function
-- below, a SQL function returning a set, which the planner inlines into the insert's
-- query (a PL/pgSQL function, or a scalar SQL function with subqueries, it cannot).
--
-- message_search_vectors is message_search_vector (000016, with 000022's parts) written
-- as one query: the same parts, the same weights, the same vector (interop's
-- TestImportedVectorsAreTheTriggers compares them for every kind of message). A change
-- to either changes both.
CREATE FUNCTION message_search_vectors(cfg regconfig, kind text, content text, payload jsonb, tool_calls jsonb, tool_results jsonb)
    RETURNS SETOF tsvector LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT setweight(to_tsvector(cfg, search_split(coalesce(p.names, ''))), 'A')
        || setweight(to_tsvector(cfg, search_split(coalesce(p.body, ''))), 'B')
        || setweight(to_tsvector(cfg, search_split(coalesce(p.detail, ''))), 'C')
        || setweight(to_tsvector(cfg, search_split(coalesce(p.thinking, ''))), 'D')
    FROM (SELECT
        CASE kind
        WHEN 'tool_request' THEN (SELECT string_agg(search_escape(c->>'name'), ' ')
            FROM jsonb_array_elements(CASE WHEN jsonb_typeof(tool_calls) = 'array' THEN tool_calls END) c)
        WHEN 'tool_result' THEN search_escape(tool_results->0->>'toolName')
        WHEN 'file_reference' THEN search_escape(payload->>'path')
        WHEN 'mcp_resource' THEN search_escape(concat_ws(' ', payload->>'serverName', payload->>'resourceUri'))
        END AS names,
        CASE kind
        WHEN 'tool_result' THEN concat_ws(' ', content, search_escape(tool_results->0->'error'->>'message'))
        WHEN 'file_reference' THEN NULL
        WHEN 'image' THEN NULL
        WHEN 'system_control' THEN NULL
        ELSE content
        END AS body,
        CASE kind
        WHEN 'tool_request' THEN (SELECT string_agg(search_escape(coalesce(c->>'argumentsRaw', c->>'arguments')), ' ')
            FROM jsonb_array_elements(CASE WHEN jsonb_typeof(tool_calls) = 'array' THEN tool_calls END) c)
        WHEN 'tool_result' THEN search_escape(coalesce(tool_results->0->>'outputRaw', tool_results->0->>'output'))
        WHEN 'file_reference' THEN search_escape(payload->'resolution'->>'Content')
        WHEN 'image' THEN search_escape(concat_ws(' ', payload->'recognition'->>'RecognizedText',
            payload->'recognition'->>'VisionAnalysis'))
        END AS detail,
        CASE WHEN payload @? '$.parts[*] ? (@.kind == "THINKING")' THEN (SELECT string_agg(t->>'content', ' ')
            FROM jsonb_array_elements(payload->'parts') t WHERE t->>'kind' = 'THINKING')
        END AS thinking) p
$$;
