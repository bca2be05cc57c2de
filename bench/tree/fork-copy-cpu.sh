#!/usr/bin/env bash
# fork-copy-cpu.sh: where a fork's copy (db.ForkConversation's INSERT ... SELECT) spends
# Postgres CPU. Runs the copy of one conversation's segment 0 in rolled-back
# transactions, each with one part changed, interleaved (ROUNDS rounds), and prints each
# variant's median backend CPU (utime + stime from /proc/<backend pid>/stat: run it on
# the machine of the database, e.g. one left by `go run ./bench/tree -database-url ...`).
#   split      the search trigger as migration 000023 has it (the fork's rows skip it)
#   combined   000021's one trigger, called for every row
#   no_gin     split, without the GIN search index
#   no_fk      split, without the foreign key to conversations
#   no_btrees  split, without five btree indexes (position key, branch, newest, source, client id)
#   read       the SELECT alone
# Usage: bench/tree/fork-copy-cpu.sh <source conversation uuid> [psql connection args...]
set -euo pipefail
src=$1; shift
rounds=${ROUNDS:-8}
split="DROP TRIGGER IF EXISTS messages_search_vector_update ON messages; DROP TRIGGER messages_search_vector ON messages;
CREATE TRIGGER messages_search_vector BEFORE INSERT ON messages FOR EACH ROW WHEN (NEW.search_vector IS NULL OR NEW.owner IS NULL) EXECUTE FUNCTION messages_search_vector();
CREATE TRIGGER messages_search_vector_update BEFORE UPDATE OF kind, content, payload, tool_calls, tool_results, status, deleted_at ON messages FOR EACH ROW EXECUTE FUNCTION messages_search_vector();"
combined="DROP TRIGGER IF EXISTS messages_search_vector_update ON messages; DROP TRIGGER messages_search_vector ON messages;
CREATE TRIGGER messages_search_vector BEFORE INSERT OR UPDATE OF kind, content, payload, tool_calls, tool_results, status, deleted_at ON messages FOR EACH ROW EXECUTE FUNCTION messages_search_vector();"
declare -A setup=(
  [split]="$split"
  [combined]="$combined"
  [no_gin]="$split DROP INDEX messages_search_idx;"
  [no_fk]="$split ALTER TABLE messages DROP CONSTRAINT messages_conversation_id_fkey;"
  [no_btrees]="$split ALTER TABLE messages DROP CONSTRAINT messages_conversation_id_position_key;
    DROP INDEX messages_branch_idx, messages_search_newest_idx, messages_source_idx, messages_client_id_idx;"
  [read]="$split"
)
variants=(split combined no_gin no_fk no_btrees read)
select="SELECT :'id', m.depth, 0, m.depth, m.schema_version, m.kind, m.role, m.content, m.tool_calls, m.tool_results,
  m.payload, m.source_id, m.created_at, m.updated_at, m.status, m.status_reason, m.client_message_id,
  m.body_digest, m.provenance, m.hidden, m.deleted_at, m.search_vector, 'bench'
  FROM messages m WHERE m.conversation_id = '$src' AND m.segment = 0"
{
  echo "SET client_min_messages = warning;"
  echo "SELECT pg_backend_pid() AS pid \\gset"
  echo "\\setenv PGPID :pid"
  for ((r = 0; r < rounds; r++)); do
    for ((k = 0; k < ${#variants[@]}; k++)); do
      v=${variants[$(((k + r) % ${#variants[@]}))]}
      echo "BEGIN;"
      echo "${setup[$v]}"
      echo "INSERT INTO conversations (title, owner) VALUES ('fork-copy-cpu', 'bench') RETURNING id \\gset"
      echo "\\! echo \"start $v \$(awk '{print \$14 + \$15}' /proc/\$PGPID/stat)\""
      if [[ $v == read ]]; then
        echo "SELECT count(*) FROM ($select) s;"
      else
        echo "INSERT INTO messages (conversation_id, position, segment, depth, schema_version, kind, role, content,
  tool_calls, tool_results, payload, source_id, created_at, updated_at, status, status_reason,
  client_message_id, body_digest, provenance, hidden, deleted_at, search_vector, owner) $select;"
      fi
      echo "\\! echo \"end $v \$(awk '{print \$14 + \$15}' /proc/\$PGPID/stat)\""
      echo "ROLLBACK;"
    done
  done
} | psql -X -q -At -v ON_ERROR_STOP=1 "$@" | awk -v hz="$(getconf CLK_TCK)" '
  $1 == "start" { s = $3 }
  $1 == "end" { n[$2]++; t[$2, n[$2]] = ($3 - s) * 1000 / hz }
  END {
    for (v in n) {
      m = n[v]; for (i = 1; i <= m; i++) a[i] = t[v, i]
      for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
      med = (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
      printf "%-10s median %5.0f ms CPU over %d runs\n", v, med, m
    }
  }' | sort
