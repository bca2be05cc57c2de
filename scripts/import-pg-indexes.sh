#!/usr/bin/env bash
# import-pg-indexes.sh: what each index, the foreign key and the triggers on messages cost
# an import's insert (docs/performance.md, "The import's sixth round"). Each variant
# copies a conversation's 100,000 messages (with their search vectors, as an import
# stages them from its second batch on) into a temporary table, drops one index or
# constraint (or disables the triggers), and inserts the rows into messages as an import
# does (importInsertVectorsSQL), in one rolled-back transaction; it prints the CPU its
# backend took for the insert alone (from /proc: a superuser on the same machine, such
# as the postgres user of a local cluster). Give it a database holding an imported
# conversation (parley import of the generated session: internal/sessiongen):
#
#   scripts/import-pg-indexes.sh 'host=/tmp/pg port=5432 dbname=parley user=postgres' [rounds]
set -euo pipefail
dsn=$1
rounds=${2:-3}
cols='id, conversation_id, position, schema_version, kind, role, content, tool_calls, tool_results, payload, source_id, created_at, updated_at, provenance, segment, depth, hidden, deleted_at'
scols=$(sed -E 's/([a-z_]+)/s.\1/g' <<<"$cols")
conv=$(psql "$dsn" -Atc "SELECT id FROM conversations ORDER BY message_count DESC LIMIT 1")
rows=$(mktemp /tmp/import-pg-indexes-XXXX.txt)
trap 'rm -f "$rows"' EXIT
chmod 644 "$rows"
new=00000000-0000-4000-8000-0000000000ab
psql "$dsn" -qc "\\copy (SELECT gen_random_uuid(), '$new'::uuid, ${cols#id, conversation_id, }, search_vector FROM messages WHERE conversation_id = '$conv' ORDER BY position) TO '$rows'"
# The conversation after any DDL: its insert leaves a deferred trigger event pending.
stage="INSERT INTO conversations (id) VALUES ('$new');
	CREATE TEMPORARY TABLE stage ON COMMIT DROP AS SELECT $cols, search_vector FROM messages WITH NO DATA; COPY stage FROM '$rows';"
insert="INSERT INTO messages ($cols, owner, search_vector) SELECT $scols, 'local', s.search_vector FROM stage s;"
declare -A variant=(
	[00-all]=""
	[01-pkey]="ALTER TABLE messages DROP CONSTRAINT messages_pkey CASCADE;"
	[02-conversation_id_position_key]="ALTER TABLE messages DROP CONSTRAINT messages_conversation_id_position_key;"
	[03-branch_idx]="DROP INDEX messages_branch_idx;"
	[04-source_idx]="DROP INDEX messages_source_idx;"
	[05-search_idx-gin]="DROP INDEX messages_search_idx;"
	[06-search_newest_idx]="DROP INDEX messages_search_newest_idx;"
	[07-change_seq_idx]="DROP INDEX messages_change_seq_idx;"
	[08-client_id_idx]="DROP INDEX messages_client_id_idx;"
	[09-lease_idx]="DROP INDEX messages_lease_idx;"
	[10-mcp_resource_idx]="DROP INDEX messages_mcp_resource_idx;"
	[11-streaming_idx]="DROP INDEX messages_streaming_idx;"
	[12-conversation_fk]="ALTER TABLE messages DROP CONSTRAINT messages_conversation_id_fkey;"
	[13-triggers]="ALTER TABLE messages DISABLE TRIGGER messages_linear_depth, DISABLE TRIGGER messages_search_vector;"
	[14-no-index-fk-trigger]="ALTER TABLE messages DROP CONSTRAINT messages_pkey CASCADE, DROP CONSTRAINT messages_conversation_id_position_key,
		DROP CONSTRAINT messages_conversation_id_fkey, DISABLE TRIGGER messages_linear_depth, DISABLE TRIGGER messages_search_vector;
		DROP INDEX messages_branch_idx, messages_source_idx, messages_search_idx, messages_search_newest_idx, messages_change_seq_idx,
		messages_client_id_idx, messages_lease_idx, messages_mcp_resource_idx, messages_streaming_idx;"
)
cpu="(SELECT split_part(s, ' ', 14)::int + split_part(s, ' ', 15)::int FROM pg_read_file('/proc/' || pg_backend_pid() || '/stat') s)"
for r in $(seq "$rounds"); do
	for name in $(printf '%s\n' "${!variant[@]}" | sort); do
		psql "$dsn" -qc 'VACUUM messages'
		printf '%s\n' "BEGIN; SET LOCAL jit = off; ${variant[$name]} $stage" "SELECT $cpu AS ticks \\gset t0_" "$insert" \
			"SELECT '$name', round(($cpu - :t0_ticks)/100.0, 2) AS insert_cpu_s; ROLLBACK;" |
			psql "$dsn" -qAt -v ON_ERROR_STOP=1 2>/dev/null | tail -1
	done
done
