// Package sessiongen writes the generated Claude Code session that `make bench` times
// `parley import` of, so that a Go benchmark (interop's BenchmarkImportBenchSession) can
// import and profile the same file in process.
package sessiongen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Write writes a Claude Code session file (one JSON record per line, as
// ~/.claude/projects/<project>/<session>.jsonl holds them) whose import makes n messages:
// turns of a user's prompt, an assistant reply with text and a tool call, the tool's
// result, and the assistant's answer, as Claude Code writes them (streamed replies, tool
// results carried by user records), with a summary line first.
func Write(out io.Writer, n int) error {
	w := bufio.NewWriterSize(out, 1<<20)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	const session = "7d0c5a9e-0000-4000-8000-00000000b001"
	start := time.Date(2026, 2, 10, 10, 0, 0, 0, time.UTC)
	parent := any(nil)
	seq := 0
	record := func(typ string, extra map[string]any) error {
		seq++
		uuid := fmt.Sprintf("b0000000-0000-4000-8000-%012d", seq)
		r := map[string]any{
			"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": "/home/dev/app",
			"sessionId": session, "version": "2.1.38", "gitBranch": "main", "type": typ, "uuid": uuid,
			"timestamp": start.Add(time.Duration(seq) * 100 * time.Millisecond).Format("2006-01-02T15:04:05.000Z"),
		}
		for k, v := range extra {
			r[k] = v
		}
		parent = uuid
		return enc.Encode(r)
	}
	usage := map[string]any{"input_tokens": 3, "output_tokens": 40}
	assistant := func(id string, content []any) map[string]any {
		return map[string]any{"requestId": "req_" + id, "message": map[string]any{"model": "claude-opus-4-6", "id": "msg_" + id,
			"type": "message", "role": "assistant", "content": content, "stop_reason": nil, "stop_sequence": nil, "usage": usage}}
	}
	if err := enc.Encode(map[string]any{"type": "summary", "summary": "A long refactoring session", "leafUuid": "b0000000-0000-4000-8000-000000000001"}); err != nil {
		return err
	}
	for turn := 0; seq < n; turn++ {
		call := fmt.Sprintf("toolu_%06d", turn)
		steps := []func() error{
			func() error {
				return record("user", map[string]any{"message": map[string]any{"role": "user",
					"content": fmt.Sprintf("Step %d: look at **internal/store/file_%d.go** and tell me why <Save> fails.", turn, turn%50)}})
			},
			func() error {
				return record("assistant", assistant(fmt.Sprintf("%06da", turn), []any{
					map[string]any{"type": "text", "text": "Let me read the file first."},
					map[string]any{"type": "tool_use", "id": call, "name": "Read",
						"input": map[string]any{"file_path": fmt.Sprintf("/home/dev/app/internal/store/file_%d.go", turn%50)}}}))
			},
			func() error {
				return record("user", map[string]any{"message": map[string]any{"role": "user", "content": []any{
					map[string]any{"tool_use_id": call, "type": "tool_result",
						"content": strings.Repeat("     1→package store\n     2→func (s *Store) Save() error { return nil }\n", 4)}}},
					"toolUseResult": map[string]any{"type": "text"}})
			},
			func() error {
				return record("assistant", assistant(fmt.Sprintf("%06db", turn), []any{
					map[string]any{"type": "text", "text": fmt.Sprintf("`Save` returns before the write is flushed (turn %d):\n\n- flush first\n- then close", turn)}}))
			},
		}
		for _, step := range steps {
			if seq >= n {
				break
			}
			if err := step(); err != nil {
				return err
			}
		}
	}
	return w.Flush()
}
