DROP INDEX messages_search_idx;
CREATE INDEX messages_search_idx ON messages USING gin (conversation_id, search_vector) WHERE search_vector IS NOT NULL;
CREATE INDEX messages_search_tool_result_idx ON messages (owner, (tool_results->0->>'status'), (tool_results->0->>'toolName'))
    WHERE kind = 'tool_result' AND search_vector IS NOT NULL;
DROP FUNCTION search_tool_keys(text, text, jsonb);

-- 000021's trigger and 000016's parts.
CREATE OR REPLACE FUNCTION messages_search_vector() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.owner := (SELECT owner FROM conversations WHERE id = NEW.conversation_id);
        -- A fork's copy brings its vector (migration 000019).
        IF NEW.search_vector IS NOT NULL THEN
            RETURN NEW;
        END IF;
    END IF;
    IF NEW.status = 'streaming' OR NEW.deleted_at IS NOT NULL THEN
        NEW.search_vector := NULL;
    ELSE
        NEW.search_vector := message_search_vector((SELECT config FROM search_config), NEW.kind, NEW.content,
            NEW.payload, NEW.tool_calls, NEW.tool_results);
    END IF;
    RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION message_search_parts(kind text, content text, payload jsonb, tool_calls jsonb, tool_results jsonb,
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

