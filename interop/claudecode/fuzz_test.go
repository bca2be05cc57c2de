package claudecode_test

import (
	"testing"

	"github.com/parley-dev/parley/interop/claudecode"
	"github.com/parley-dev/parley/interop/internal/fuzzimport"
)

// FuzzClaudeCode feeds the importer arbitrary input: it must not panic, and what it accepts must
// be well formed and read the same way twice (see fuzzimport.Run). CI runs it for a few
// seconds:
//
//	go test -run='^$' -fuzz=FuzzClaudeCode -fuzztime=5s ./interop/claudecode/
func FuzzClaudeCode(f *testing.F) {
	fuzzimport.Run(f, "testdata/session.jsonl", seeds, claudecode.Parse, true)
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
