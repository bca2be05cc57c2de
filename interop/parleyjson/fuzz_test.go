package parleyjson_test

import (
	"testing"

	"github.com/parley-dev/parley/interop/internal/fuzzimport"
	"github.com/parley-dev/parley/interop/parleyjson"
)

// FuzzParleyJSON feeds the importer arbitrary input: it must not panic, and what it accepts must
// be well formed and read the same way twice (see fuzzimport.Run). CI runs it for a few
// seconds:
//
//	go test -run='^$' -fuzz=FuzzParleyJSON -fuzztime=5s ./interop/parleyjson/
func FuzzParleyJSON(f *testing.F) {
	fuzzimport.Run(f, "testdata/conversation.json", seeds, parleyjson.Parse, false)
}

var seeds = []string{
	"",
	`{"format":"parley.conversation","version":1,"messages":[]}`,
	`{"format":"parley.conversation","version":1,"messages":[{"type":"text","role":"USER","parts":[{"kind":"TEXT","text":"hi"}]}]}`,
	`{"format":"parley.conversation","version":1,"messages":[{"type":"someday","role":"ROBOT","x":[1,2]}]}`,
	`{"format":"parley.conversation","version":1,"messages":[{"type":"tool_request","role":"INVOCATION","toolCalls":[{"id":"c","name":"f","arguments":{}}]},` +
		`{"type":"tool_result","role":"RESULT","toolCallId":"c","status":"ERROR","error":{"message":"m"},"truncated":true,"originalSize":9}]}`,
	`{"format":"parley.conversation","version":2}`,
	`{"format":"parley.conversation","version":1,"messages":[{"type":`,
}
