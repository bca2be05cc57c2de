// Package fuzzimport is the property every importer's fuzz target checks, so that the
// targets differ only in their parser and seeds.
package fuzzimport

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/parley-dev/parley"
)

// Run adds the seeds (seedFile when it exists, then seeds) and fuzzes parse. Whatever the
// input, parse must not panic and must refuse only with EINVALID; what it accepts must
// read the same way twice (or re-imports would not deduplicate), and every message must
// have its origin. With sourced, every message must also carry a source id and every
// tool result must follow the call it answers (formats whose records have ids).
func Run(f *testing.F, seedFile string, seeds []string, parse func(io.Reader) (*parley.Import, error), sourced bool) {
	if seed, err := os.ReadFile(seedFile); err == nil {
		f.Add(seed)
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		imp, err := parse(bytes.NewReader(data))
		if err != nil {
			if parley.ErrorCode(err) != parley.EINVALID {
				t.Fatalf("an error that is not EINVALID: %v", err)
			}
			return
		}
		again, err := parse(bytes.NewReader(data))
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
			if sourced {
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
			}
			_ = parley.Prepare(im.Message, parley.DefaultLimits) // may refuse, must not panic
		}
	})
}
