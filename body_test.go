package parley

import "testing"

func TestBodyText(t *testing.T) {
	text := func(s string) Part { return Part{Kind: PartText, Text: s} }
	think := func(s string) Part { return Part{Kind: PartThinking, Text: s} }
	tests := []struct {
		name           string
		parts          []Part
		text, thinking string
	}{
		{"none", nil, "", ""},
		{"one text part", []Part{text("a")}, "a", ""},
		{"thinking, then text", []Part{think("t"), text("a")}, "a", "t"},
		{"two text parts", []Part{text("a"), think("t"), text("b")}, "a\n\nb", "t"},
		{"an empty text part first", []Part{text(""), text("b")}, "b", ""},
		{"only thinking", []Part{think("t1"), think("t2")}, "", "t1\n\nt2"},
	}
	for _, tc := range tests {
		b := Body{Parts: tc.parts}
		if got := b.Text(); got != tc.text {
			t.Errorf("%s: Text() = %q, want %q", tc.name, got, tc.text)
		}
		if got := b.Thinking(); got != tc.thinking {
			t.Errorf("%s: Thinking() = %q, want %q", tc.name, got, tc.thinking)
		}
	}
}
