-- Forks still linked are made real first, so going down loses nothing; then the link
-- columns, the functions and the indexes go.
SELECT materialize_fork(id) FROM conversations WHERE base_depth > 0;
-- Their rows changed: the conversation list's deferred trigger (000011) runs now, since
-- Postgres refuses to alter a table with trigger events pending.
SET CONSTRAINTS ALL IMMEDIATE;
ALTER TABLE conversations ADD CONSTRAINT conversations_forked_from_fkey
    FOREIGN KEY (forked_from) REFERENCES messages (id) ON DELETE SET NULL;
DROP FUNCTION materialize_fork(uuid);
DROP FUNCTION fork_link_entries(uuid, integer);
DROP FUNCTION link_entries(uuid[], integer[], integer[], integer);
DROP TABLE fork_paths;
DROP FUNCTION fork_message_id(bigint, integer);
DROP INDEX messages_streaming_idx;
DROP INDEX conversations_linked_idx;
DROP TABLE fork_links;
ALTER TABLE conversations DROP COLUMN base_depth, DROP COLUMN fork_no;
