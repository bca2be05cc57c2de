package config_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/parley-dev/parley/config"
)

// The README's example configuration is valid, so the documentation cannot drift.
func TestREADMEExample(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```yaml\nworkspace:")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README has no ```yaml block starting with workspace:")
	}
	c, err := config.Parse([]byte("workspace:" + example))
	if err != nil {
		t.Fatalf("README example: %v", err)
	}
	if len(c.MCP.Servers) != 2 || c.Vision.Model != "gpt-4o" {
		t.Errorf("README example: got %d MCP servers and model %q", len(c.MCP.Servers), c.Vision.Model)
	}
}

// readmeRow is a row of the README's configuration table that names flags.
type readmeRow struct {
	flags             []string // without dashes
	env, def, meaning string
}

// readmeConfiguration returns the rows of the README's configuration table that name
// flags, skipping the tests' rows (make targets).
func readmeConfiguration(t *testing.T) []readmeRow {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Configuration\n")
	section, _, _ = strings.Cut(section, "\n## ")
	if !ok {
		t.Fatal("README has no ## Configuration section")
	}
	flag := regexp.MustCompile("--([a-z-]+)")
	var rows []readmeRow
	for line := range strings.SplitSeq(section, "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) != 4 || strings.Contains(cells[0], "make ") {
			continue
		}
		r := readmeRow{env: cells[1], def: cells[2], meaning: cells[3]}
		for _, m := range flag.FindAllStringSubmatch(cells[0], -1) {
			r.flags = append(r.flags, m[1])
		}
		if len(r.flags) > 0 {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		t.Fatal("README's configuration table has no rows with flags")
	}
	return rows
}

// The README's configuration table says what the declarations say: every setting has
// a row naming its flag, its environment variable, its default (as --help shows it, or
// a note in parentheses when it has none) and its file key; every flag in the table is
// declared.
func TestREADMEConfigurationTable(t *testing.T) {
	t.Parallel()
	rows := readmeConfiguration(t)
	byFlag := map[string]readmeRow{}
	for _, r := range rows {
		for _, f := range r.flags {
			if _, ok := config.Lookup(f); !ok {
				t.Errorf("README: --%s is not a declared setting (config.Settings)", f)
			}
			byFlag[f] = r
		}
	}
	for _, s := range config.Settings {
		r, ok := byFlag[s.Flag]
		if !ok {
			t.Errorf("README: no row for --%s", s.Flag)
			continue
		}
		if !strings.Contains(r.env, "`"+s.Env+"`") {
			t.Errorf("README --%s: got environment %s, want `%s`", s.Flag, r.env, s.Env)
		}
		switch def := s.Default(); {
		case s.DefaultNote != "":
			// Computed where it runs: the README says how.
		case def != "":
			if !strings.Contains(r.def, "`"+def+"`") {
				t.Errorf("README --%s: got default %s, want `%s`", s.Flag, r.def, def)
			}
		case !strings.HasPrefix(r.def, "(") && r.def != "`false`":
			t.Errorf("README --%s: got default %s, want none (a note in parentheses)", s.Flag, r.def)
		}
		if s.Key != "" && !strings.Contains(r.meaning, "`"+s.Key+"`") {
			t.Errorf("README --%s: the meaning %q does not name its file key `%s`", s.Flag, r.meaning, s.Key)
		}
	}
}
