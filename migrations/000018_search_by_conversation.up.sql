-- The search index leads with conversation_id (btree_gin, a trusted extension Postgres
-- ships in contrib). A relevance search ranks the matches of the owner's most recently
-- updated conversations (db/search.go), which Postgres can then find a conversation at
-- a time, newest first, stopping when it has enough, instead of every match of a common
-- word; a search of a rare word uses the index on its words alone. (A search leaves the
-- thinking out by restricting the query's words to weights A-C, no longer by filtering
-- each vector as 000016 says.) Rebuilding the index takes about a minute for a million
-- messages, during which messages cannot be written.
CREATE EXTENSION IF NOT EXISTS btree_gin;
DROP INDEX messages_search_idx;
CREATE INDEX messages_search_idx ON messages USING gin (conversation_id, search_vector) WHERE search_vector IS NOT NULL;
