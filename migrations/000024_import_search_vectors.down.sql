DROP FUNCTION message_search_vectors(regconfig, text, text, jsonb, jsonb, jsonb);
CREATE OR REPLACE FUNCTION search_split(t text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN regexp_replace(left(t, 100000), '([/.:\\])', E'\\1\x01', 'g');
