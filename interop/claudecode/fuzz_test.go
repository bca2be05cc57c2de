package claudecode_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/claudecode"
)

// FuzzClaudeCode feeds the importer arbitrary input. Whatever it is, the importer must not
// panic; what it accepts must be well formed (each message with its origin and a
// source id, each tool result after the call it answers ) and read the same way twice, or
// re-imports would not deduplicate. CI runs it for a few seconds:
//
//	go test -run='^$' -fuzz=FuzzClaudeCode -fuzztime=5s ./interop/claudecode/
func FuzzClaudeCode(f *testing.F) {
	if seed, err := os.ReadFile("testdata/session.jsonl"); err == nil {
		f.Add(seed)
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		imp, err := claudecode.Parse(bytes.NewReader(data))
		if err != nil {
			if parley.ErrorCode(err) != parley.EINVALID {
				t.Fatalf("an error that is not EINVALID: %v", err)
			}
			return
		}
		again, err := claudecode.Parse(bytes.NewReader(data))
		if err != nil || len(again.Messages) != len(imp.Messages) {
			t.Fatalf("a second read differs: %v", err)
		}
		calls := make(map[string]bool)
		for i, im := range imp.Messages {
			if im.Message == nil || im.Origin == "" {
				t.Fatalf("message %d: %#v has no origin", i, im)
			}
			if got, want := again.Messages[i].Message.Meta().SourceID, im.Message.Meta().SourceID; got != want {
				t.Fatalf("message %d: source id %q, then %q", i, want, got)
			}
			if im.Message.Meta().SourceID == "" {
				t.Fatalf("message %d (%s) has no source id", i, im.Origin)
			}
			switch m := im.Message.(type) {
			case *parley.ToolRequestMessage:
				for _, c := range m.ToolCalls {
					calls[c.ID] = true
				}
			case *parley.ToolResultMessage:
				if !calls[m.ToolCallID] {
					t.Fatalf("message %d (%s): a result for %q, which no earlier message calls", i, im.Origin, m.ToolCallID)
				}
			}
			_ = parley.Prepare(im.Message, parley.DefaultLimits) // may refuse, must not panic
		}
		_ = calls
	})
}

var seeds = []string{
	"",
	"\n\n",
	`{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}`,
	`{"type":"assistant","uuid":"a1","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}` + "\n" +
		`{"type":"user","uuid":"u2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok"}],"is_error":true}]}}`,
	`{"type":"summary","summary":"t","leafUuid":"u1"}` + "\n" + `{"type":"progress"}` + "\n" + `{"type":"x-new"}`,
	`{"type":"user","isSidechain":true,"message":{"content":"x"}}`,
	`{"type":"user","message":{"content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGk="}}]}}`,
	`{"type":"user","message":{"content":`,
}
