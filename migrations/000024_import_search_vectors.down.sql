DROP FUNCTION message_search_vectors(regconfig, text, text, jsonb, jsonb, jsonb);
