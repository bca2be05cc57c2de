package parley_test

import (
	"testing"

	"github.com/parley-dev/parley"
)

func TestToolOutputRaw(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name       string
		output     parley.JSON
		raw        *string
		max        int
		code       string
		wantOutput string
		wantRaw    *string
	}{
		{name: "kept as given", raw: str(`{"b": 1, "a": 1e2}`), max: 100, wantOutput: `{"b": 1, "a": 1e2}`, wantRaw: str(`{"b": 1, "a": 1e2}`)},
		{name: "a JSON string", raw: str(`"done"`), max: 100, wantOutput: `"done"`, wantRaw: str(`"done"`)},
		{name: "both forms", output: parley.JSON(`{}`), raw: str(`{}`), max: 100, code: parley.EINVALID},
		{name: "not JSON", raw: str(`{"a":`), max: 100, code: parley.EINVALID},
		{name: "plain text", raw: str(`done`), max: 100, code: parley.EINVALID},
		{name: "NUL in a string", raw: str(`"a\u0000"`), max: 100, code: parley.EINVALID},
		// Cut short, it is no longer what was given: only the truncated output is kept.
		{name: "truncated", raw: str(`{"a": 1}`), max: 4, wantOutput: `"{\"a\""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := &parley.ToolResultMessage{ToolCallID: "c", Status: parley.ToolSuccess, Output: tc.output, OutputRaw: tc.raw}
			err := parley.Prepare(m, parley.Limits{MaxToolOutputBytes: tc.max, MaxImageBytes: 1})
			if got := parley.ErrorCode(err); got != tc.code {
				t.Fatalf("got error %v (code %q), want code %q", err, got, tc.code)
			}
			if tc.code != "" {
				return
			}
			if string(m.Output) != tc.wantOutput {
				t.Errorf("output: got %s, want %s", m.Output, tc.wantOutput)
			}
			if (m.OutputRaw == nil) != (tc.wantRaw == nil) || m.OutputRaw != nil && *m.OutputRaw != *tc.wantRaw {
				t.Errorf("outputRaw: got %v, want %v", m.OutputRaw, tc.wantRaw)
			}
		})
	}
}
