package anthropic_test

import (
	"testing"

	"github.com/parley-dev/parley/interop/anthropic"
	"github.com/parley-dev/parley/interop/internal/fuzzimport"
)

// FuzzAnthropicMessages feeds the importer arbitrary input: it must not panic, and what it accepts must
// be well formed and read the same way twice (see fuzzimport.Run). CI runs it for a few
// seconds:
//
//	go test -run='^$' -fuzz=FuzzAnthropicMessages -fuzztime=5s ./interop/anthropic/
func FuzzAnthropicMessages(f *testing.F) {
	fuzzimport.Run(f, "testdata/messages.json", seeds, anthropic.Parse, true)
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
