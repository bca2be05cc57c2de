package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDemoteHeadings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
	}{
		{"shallowest to the top", "## Live\n\ntext\n\n### Rows\n", "#### Live\n\ntext\n\n##### Rows"},
		{"already deep enough", "##### Deep\n", "##### Deep"},
		{"code fences kept", "# Top\n```\n# not a heading\n```\n", "#### Top\n```\n# not a heading\n```"},
		{"hash without a space is not a heading", "#hashtag\n## H\n", "#hashtag\n#### H"},
		{"no headings", "| a | b |\n", "| a | b |"},
	} {
		if got := demoteHeadings(tc.in, 4); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestReadSections(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok := filepath.Join(dir, "search-report.md")
	if err := os.WriteFile(ok, []byte("## Search\n\n| row | p50 |\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var flags sectionFlags
	for _, f := range []string{"Search=" + ok, "Tree=", "Gone=" + filepath.Join(dir, "missing.md")} {
		if err := flags.Set(f); err != nil {
			t.Fatalf("Set(%q): %v", f, err)
		}
	}
	if err := flags.Set("=x.md"); err == nil {
		t.Error("Set(\"=x.md\"): got no error, want one naming the form title=file")
	}
	got := readSections(flags)
	if len(got) != 3 {
		t.Fatalf("got %d sections, want 3", len(got))
	}
	if got[0].Title != "Search" || !strings.HasPrefix(got[0].Markdown, "#### Search") {
		t.Errorf("section 0: got %q %q, want Search with its heading demoted", got[0].Title, got[0].Markdown)
	}
	for _, s := range got[1:] {
		if s.Markdown != "" {
			t.Errorf("section %s: got %q, want no report (failed)", s.Title, s.Markdown)
		}
	}
	rep := buildReport(&results{Sections: got}, nil).markdown("report.svg")
	for _, want := range []string{"### Search", "#### Search", "### Tree\n\n**Failed**", "### Gone\n\n**Failed**"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
