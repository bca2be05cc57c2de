package parley_test

import (
	"strings"
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

func TestToolResultImagePart(t *testing.T) {
	t.Parallel()
	img := func(data string) parley.Part {
		return parley.Part{Kind: parley.PartImage, Raw: parley.JSON(`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + data + `"}}`)}
	}
	for _, tc := range []struct {
		name string
		part parley.Part
		ok   bool
	}{
		{"an image block", img("AAAA"), true},
		{"over the image limit", img(strings.Repeat("A", 4000)), false},
		{"not an image block", parley.Part{Kind: parley.PartImage, Raw: parley.JSON(`{"type":"text","text":"x"}`)}, false},
		{"with text", parley.Part{Kind: parley.PartImage, Text: "x", Raw: img("AAAA").Raw}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := &parley.ToolResultMessage{ToolCallID: "c", Status: parley.ToolSuccess, Body: parley.Body{Parts: []parley.Part{tc.part}}}
			err := parley.Prepare(m, parley.Limits{MaxImageBytes: 1000})
			if (err == nil) != tc.ok {
				t.Errorf("got error %v, want ok %v", err, tc.ok)
			}
		})
	}
	// Only a tool result holds images as parts.
	m := &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.Body{Parts: []parley.Part{img("AAAA")}}}
	if err := parley.Prepare(m, parley.DefaultLimits); parley.ErrorCode(err) != parley.EINVALID {
		t.Errorf("IMAGE part in a text message: got %v, want EINVALID", err)
	}
}
