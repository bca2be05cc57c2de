#!/usr/bin/env bash
# import-pg-parts.sh: where Postgres's CPU goes when an import stores 100,000 messages
# (README, "The import's search vectors per batch"). Each variant inserts a copy of a
# conversation's messages into a new conversation in one rolled-back transaction, and
# prints the CPU of its backend (from /proc: a superuser on the same machine, such as the
# postgres user of a local cluster). Give it a database holding an imported conversation
# (parley import of the generated session: internal/sessiongen, as make bench makes it):
#
#   scripts/import-pg-parts.sh 'host=/tmp/pg port=5432 dbname=parley user=postgres' [rounds]
set -euo pipefail
dsn=$1
rounds=${2:-2}
cols='id, conversation_id, position, schema_version, kind, role, content, tool_calls, tool_results, payload, source_id, created_at, updated_at, provenance, segment, depth, hidden, deleted_at'
scols=$(sed -E 's/([a-z_]+)/s.\1/g' <<<"$cols")
conv=$(psql "$dsn" -Atc "SELECT id FROM conversations ORDER BY message_count DESC LIMIT 1")
rows=$(mktemp /tmp/import-pg-parts-XXXX.txt)
trap 'rm -f "$rows"' EXIT
chmod 644 "$rows"
new=00000000-0000-4000-8000-0000000000aa
psql "$dsn" -qc "\\copy (SELECT gen_random_uuid(), '$new'::uuid, ${cols#id, conversation_id, } FROM messages WHERE conversation_id = '$conv' ORDER BY position) TO '$rows'"
begin="BEGIN; SET LOCAL jit = off;"
# The conversation after any DDL: its insert leaves a deferred trigger event pending.
stage="INSERT INTO conversations (id) VALUES ('$new'); CREATE TEMPORARY TABLE stage ON COMMIT DROP AS SELECT $cols FROM messages WITH NO DATA; COPY stage ($cols) FROM '$rows';"
insert="INSERT INTO messages ($cols, owner, search_vector) SELECT $scols, 'local',"
vectors="v FROM stage s CROSS JOIN (SELECT config FROM search_config LIMIT 1) k
	CROSS JOIN LATERAL message_search_vectors(k.config, s.kind, s.content, s.payload, s.tool_calls, s.tool_results) v;"
declare -A variant=(
	[1-copy-with-trigger]="$begin INSERT INTO conversations (id) VALUES ('$new'); COPY messages ($cols) FROM '$rows';"
	[2-staged-vectors-per-batch]="$begin $stage $insert $vectors"
	[3-staged-vectors-given]="$begin $stage $insert m.search_vector FROM stage s JOIN messages m ON m.conversation_id = '$conv' AND m.position = s.position;"
	[4-staged-without-fk]="$begin ALTER TABLE messages DROP CONSTRAINT messages_conversation_id_fkey; $stage $insert $vectors"
	[5-staged-without-gin]="$begin DROP INDEX messages_search_idx; $stage $insert $vectors"
	[6-staged-without-btrees]="$begin DROP INDEX messages_change_seq_idx, messages_client_id_idx, messages_lease_idx, messages_mcp_resource_idx,
		messages_search_newest_idx, messages_source_idx, messages_branch_idx;
		ALTER TABLE messages DROP CONSTRAINT messages_conversation_id_position_key; $stage $insert $vectors"
	[7-staging-copy-alone]="$begin $stage"
)
cpu="(SELECT split_part(s, ' ', 14)::int + split_part(s, ' ', 15)::int FROM pg_read_file('/proc/' || pg_backend_pid() || '/stat') s)"
for r in $(seq "$rounds"); do
	for name in $(printf '%s\n' "${!variant[@]}" | sort); do
		psql "$dsn" -qc 'VACUUM messages'
		printf '%s\n' "SELECT $cpu AS ticks \\gset t0_" "${variant[$name]} ROLLBACK;" \
			"SELECT '$name', round(($cpu - :t0_ticks)/100.0, 2) AS backend_cpu_s;" |
			psql "$dsn" -qAt -v ON_ERROR_STOP=1 | tail -1
	done
done
