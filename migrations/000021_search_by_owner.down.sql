DROP INDEX messages_search_tool_result_idx;
DROP INDEX messages_search_newest_idx;

CREATE OR REPLACE FUNCTION messages_search_vector() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' AND NEW.search_vector IS NOT NULL THEN
        RETURN NEW;
    END IF;
    IF NEW.status = 'streaming' OR NEW.deleted_at IS NOT NULL THEN
        NEW.search_vector := NULL;
    ELSE
        NEW.search_vector := message_search_vector((SELECT config FROM search_config), NEW.kind, NEW.content,
            NEW.payload, NEW.tool_calls, NEW.tool_results);
    END IF;
    RETURN NEW;
END $$;

ALTER TABLE messages DROP COLUMN owner;
