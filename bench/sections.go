package main

import (
	"fmt"
	"os"
	"strings"
)

// section is the Markdown report of a benchmark of its own (make bench-streaming,
// bench-search, bench-tree...), run by scripts/bench.sh before this program and included
// in the report as it wrote it.
type section struct {
	Title string `json:"title"`
	// File is where its report was read from.
	File string `json:"file,omitempty"`
	// Markdown is the report, its headings moved below this report's (demoteHeadings);
	// empty when the benchmark failed.
	Markdown string `json:"markdown,omitempty"`
}

// sectionFlags collects -section title=file, in order.
type sectionFlags []string

func (s *sectionFlags) String() string { return strings.Join(*s, ", ") }

func (s *sectionFlags) Set(v string) error {
	if !strings.Contains(v, "=") || strings.HasPrefix(v, "=") {
		return fmt.Errorf("want title=file (file empty: the benchmark failed), got %q", v)
	}
	*s = append(*s, v)
	return nil
}

// readSections reads the reports named by -section: a title with an empty file is a
// benchmark that failed, and so is a file that is missing or empty.
func readSections(flags []string) []section {
	out := make([]section, 0, len(flags))
	for _, f := range flags {
		title, file, _ := strings.Cut(f, "=")
		s := section{Title: title, File: file}
		if file != "" {
			if b, err := os.ReadFile(file); err == nil {
				s.Markdown = demoteHeadings(string(b), 4)
			}
		}
		out = append(out, s)
	}
	return out
}

// demoteHeadings moves md's headings down so that its shallowest is at level top (####
// for 4), keeping their relative levels; lines inside code fences are left alone.
func demoteHeadings(md string, top int) string {
	lines := strings.Split(strings.TrimSpace(md), "\n")
	level := func(l string) int {
		n := len(l) - len(strings.TrimLeft(l, "#"))
		if n == 0 || n > 6 || (len(l) > n && l[n] != ' ') {
			return 0
		}
		return n
	}
	shallowest, fenced := 7, false
	for _, l := range lines {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
		} else if n := level(l); !fenced && n > 0 {
			shallowest = min(shallowest, n)
		}
	}
	if shallowest > 6 || shallowest >= top {
		return strings.Join(lines, "\n")
	}
	shift := strings.Repeat("#", top-shallowest)
	fenced = false
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
		} else if !fenced && level(l) > 0 {
			lines[i] = shift + l
		}
	}
	return strings.Join(lines, "\n")
}
