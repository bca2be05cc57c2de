DROP INDEX messages_search_idx;
CREATE INDEX messages_search_idx ON messages USING gin (search_vector) WHERE search_vector IS NOT NULL;
DROP EXTENSION IF EXISTS btree_gin;
