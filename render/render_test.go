package render_test

import (
	"strings"
	"testing"

	"github.com/parley-dev/parley/render"
)

func TestHTML(t *testing.T) {
	t.Parallel()
	r := render.New(render.Config{})
	tests := []struct {
		in          string
		has, hasNot []string
	}{
		{in: "# Title\n\n*em* and `code`", has: []string{"<h1", "<em>em</em>", "<code>code</code>"}},
		{in: "<script>alert(1)</script>", hasNot: []string{"<script"}},
		{in: `<div onclick="x()">hi</div>`, hasNot: []string{"onclick"}},
		{in: "[a](javascript:alert(1))", hasNot: []string{"javascript:"}},
		{in: "| a | b |\n|---|---|\n| 1 | 2 |", has: []string{"<table>", "<td>1</td>"}},
		{in: "<https://example.com>", has: []string{`href="https://example.com"`, `rel="nofollow"`}},
	}
	for _, tt := range tests {
		got := r.HTML(tt.in)
		for _, s := range tt.has {
			if !strings.Contains(got, s) {
				t.Errorf("HTML(%q) = %q, lacks %q", tt.in, got, s)
			}
		}
		for _, s := range tt.hasNot {
			if strings.Contains(got, s) {
				t.Errorf("HTML(%q) = %q, contains %q", tt.in, got, s)
			}
		}
	}
}
