package anthropic_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/anthropic"
)

// FuzzAnthropicMessages feeds the importer arbitrary input. Whatever it is, the importer must not
// panic; what it accepts must be well formed (each message with its origin and a
// source id, each tool result after the call it answers ) and read the same way twice, or
// re-imports would not deduplicate. CI runs it for a few seconds:
//
//	go test -run='^$' -fuzz=FuzzAnthropicMessages -fuzztime=5s ./interop/anthropic/
func FuzzAnthropicMessages(f *testing.F) {
	if seed, err := os.ReadFile("testdata/messages.json"); err == nil {
		f.Add(seed)
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		imp, err := anthropic.Parse(bytes.NewReader(data))
		if err != nil {
			if parley.ErrorCode(err) != parley.EINVALID {
				t.Fatalf("an error that is not EINVALID: %v", err)
			}
			return
		}
		again, err := anthropic.Parse(bytes.NewReader(data))
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
	`{"messages":[]}`,
	`{"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"hi"}]}`,
	`[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"t1","name":"f","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"r"}],"is_error":true},{"type":"text","text":"next"}]}]`,
	`[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGk="}}]}]`,
	`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x"}]}]`,
	`{"messages":[{"role":`,
}
