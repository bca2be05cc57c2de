package parleyjson_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/parleyjson"
)

// FuzzParleyJSON feeds the importer arbitrary input. Whatever it is, the importer must not
// panic; what it accepts must be well formed (each message with its origin ) and read the same way twice, or
// re-imports would not deduplicate. CI runs it for a few seconds:
//
//	go test -run='^$' -fuzz=FuzzParleyJSON -fuzztime=5s ./interop/parleyjson/
func FuzzParleyJSON(f *testing.F) {
	if seed, err := os.ReadFile("testdata/conversation.json"); err == nil {
		f.Add(seed)
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		imp, err := parleyjson.Parse(bytes.NewReader(data))
		if err != nil {
			if parley.ErrorCode(err) != parley.EINVALID {
				t.Fatalf("an error that is not EINVALID: %v", err)
			}
			return
		}
		again, err := parleyjson.Parse(bytes.NewReader(data))
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

			_ = parley.Prepare(im.Message, parley.DefaultLimits) // may refuse, must not panic
		}
		_ = calls
	})
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
