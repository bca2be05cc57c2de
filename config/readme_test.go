package config_test

import (
	"os"
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
