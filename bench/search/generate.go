package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lib/pq"
)

// generate makes conversations conversations of perConv messages each: half of them the
// heavy owner's, the rest spread over owner0..owner98. Conversations are made in SQL
// (generate_series), messages streamed in with COPY, the search trigger computing each
// vector as it goes in. The GIN index is dropped first and built after (run creates it).
func generate(ctx context.Context, raw *sql.DB, conversations, perConv int) error {
	if _, err := raw.ExecContext(ctx, `DROP INDEX messages_search_idx`); err != nil {
		return err
	}
	if _, err := raw.ExecContext(ctx, `INSERT INTO conversations (owner, title, created_at, updated_at, last_position, message_count)
		SELECT CASE WHEN i % 2 = 0 THEN 'heavy' ELSE 'owner' || (i % 99) END, 'Session ' || i,
			now() - make_interval(days => 200) + make_interval(mins => i * 20), now() - make_interval(days => 200) + make_interval(mins => i * 20 + 60),
			$2, $2
		FROM generate_series(1, $1) i`, conversations, perConv); err != nil {
		return err
	}
	rows, err := raw.QueryContext(ctx, `SELECT id, created_at FROM conversations ORDER BY created_at`)
	if err != nil {
		return err
	}
	type conv struct {
		id string
		at time.Time
	}
	var convs []conv
	for rows.Next() {
		var c conv
		if err := rows.Scan(&c.id, &c.at); err != nil {
			return err
		}
		convs = append(convs, c)
	}
	rows.Close()

	g := newGen()
	const batch = 500 // conversations a transaction
	for start := 0; start < len(convs); start += batch {
		tx, err := raw.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		stmt, err := tx.PrepareContext(ctx, pq.CopyIn("messages", "conversation_id", "position", "segment", "depth", "kind", "role",
			"content", "payload", "tool_calls", "tool_results", "provenance", "created_at", "updated_at"))
		if err != nil {
			tx.Rollback()
			return err
		}
		for _, c := range convs[start:min(start+batch, len(convs))] {
			for p := 1; p <= perConv; p++ {
				m := g.message(p)
				at := c.at.Add(time.Duration(p) * 30 * time.Second)
				if _, err := stmt.ExecContext(ctx, c.id, p, 0, p, m.kind, m.role, m.content, m.payload, m.toolCalls, m.toolResults, m.provenance, at, at); err != nil {
					tx.Rollback()
					return err
				}
			}
		}
		if _, err := stmt.ExecContext(ctx); err != nil {
			tx.Rollback()
			return err
		}
		stmt.Close()
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

type genMessage struct {
	kind, role, content                         string
	payload, toolCalls, toolResults, provenance any
}

type gen struct {
	rng   *rand.Rand
	vocab []string
	call  int
	// The current tool call, for the result after it.
	tool, callID string
}

func newGen() *gen { return &gen{rng: rand.New(rand.NewPCG(7, 11)), vocab: vocabulary()} }

// words draws n words, Zipf-like (the cube of a uniform draw indexes the vocabulary),
// and now and then a rare word from the tail.
func (g *gen) words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = g.vocab[int(float64(len(g.vocab))*pow3(g.rng.Float64()))]
	}
	return strings.Join(w, " ")
}

var tools = []string{"bash", "read_file", "write_file", "edit_file", "grep", "glob", "mcp__github__search_issues", "mcp__linear__get_issue", "web_fetch", "list_dir"}

var paths = []string{"internal/pgtest/pgtest.go", "db/search.go", "graph/schema/search.graphqls", "cmd/parley/main.go", "README.md",
	"server/server.go", "config/settings.go", "web/src/App.tsx", "deploy/k8s/deployment.yaml", "scripts/bench.sh"}

// js is v as JSON text: COPY would send a []byte as bytea.
func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// message is the message at position p of a conversation: a cycle of a user prompt, an
// assistant reply (thinking first), tool calls and their results, and a file reference.
func (g *gen) message(p int) genMessage {
	esc := func(s string) string { return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s) }
	switch p % 10 {
	case 1, 6:
		t := g.words(20 + g.rng.IntN(40))
		return genMessage{kind: "text", role: "user", content: esc(t), payload: js(map[string]any{"parts": []any{map[string]any{"kind": "TEXT", "content": esc(t)}}})}
	case 2, 7, 0:
		t, th := g.words(30+g.rng.IntN(60)), g.words(20+g.rng.IntN(30))
		model, provider := "claude-sonnet-4-5", "anthropic"
		if g.rng.IntN(3) == 0 {
			model, provider = "gpt-5", "openai"
		}
		return genMessage{kind: "text", role: "assistant", content: esc(t),
			payload:    js(map[string]any{"parts": []any{map[string]any{"kind": "THINKING", "content": esc(th)}, map[string]any{"kind": "TEXT", "content": esc(t)}}}),
			provenance: js(map[string]any{"provider": provider, "model": model})}
	case 3, 8:
		g.call++
		g.tool, g.callID = tools[int(float64(len(tools))*pow3(g.rng.Float64()))], fmt.Sprintf("call_%d", g.call)
		args := map[string]any{"path": paths[g.rng.IntN(len(paths))], "command": g.words(6)}
		return genMessage{kind: "tool_request", role: "invocation", content: "", payload: js(map[string]any{}),
			toolCalls: js([]any{map[string]any{"id": g.callID, "name": g.tool, "arguments": args, "approvalStatus": "APPROVED"}})}
	case 4, 9:
		r := map[string]any{"toolCallId": g.callID, "toolName": g.tool, "status": "SUCCESS", "output": g.words(30 + g.rng.IntN(120))}
		if g.rng.IntN(7) == 0 {
			r["status"] = "ERROR"
			msg := "exit status 1: " + g.words(8)
			if g.rng.IntN(3) == 0 {
				msg = "timeout after 30s: " + g.words(8)
			}
			r["error"] = map[string]any{"message": msg, "recoverable": true}
		}
		return genMessage{kind: "tool_result", role: "result", content: "", payload: js(map[string]any{}), toolResults: js([]any{r})}
	default:
		path := paths[g.rng.IntN(len(paths))]
		return genMessage{kind: "file_reference", role: "document", payload: js(map[string]any{"path": path,
			"resolution": map[string]any{"Status": "COMPLETED", "Content": g.words(80), "ResolvedAt": time.Now()}})}
	}
}
