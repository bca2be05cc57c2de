package openai_test

import (
	"testing"

	"github.com/parley-dev/parley/interop/internal/fuzzimport"
	"github.com/parley-dev/parley/interop/openai"
)

// FuzzOpenAIChat feeds the importer arbitrary input: it must not panic, and what it accepts must
// be well formed and read the same way twice (see fuzzimport.Run). CI runs it for a few
// seconds:
//
//	go test -run='^$' -fuzz=FuzzOpenAIChat -fuzztime=5s ./interop/openai/
func FuzzOpenAIChat(f *testing.F) {
	fuzzimport.Run(f, "testdata/chat.json", seeds, openai.ParseChat, true)
}

var seeds = []string{
	"",
	"[]",
	`{"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
	`[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]`,
	`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,aGk="}}]}]`,
	`[{"role":"tool","tool_call_id":"x","content":"r"}]`,
	`[{"role":`,
}
