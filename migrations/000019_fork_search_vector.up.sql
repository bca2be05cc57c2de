-- A fork copies its path's rows (db.ForkConversation) and, with them, their search
-- vectors: a message's vector depends only on its columns and the search configuration,
-- both the same in the copy. Recomputing it (to_tsvector over every part of every
-- message) was about 60% of a fork's time (615 ms of 1.2 s for 10,000 messages). So an
-- INSERT that brings a vector keeps it; every other insert and every update computes it
-- as 000016 does. Only the store writes this column, and only the fork gives it on
-- insert (a COPY of an import and every other insert leave it NULL).
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
