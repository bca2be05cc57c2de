package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/config"
)

func TestParse(t *testing.T) {
	t.Parallel()
	c, err := config.Parse([]byte(`
workspace:
  root: /srv/ws
agents:
  planner: [read_files]
  REVIEWER: []
tools:
  default: deny
  policies:
    echo: AUTO_APPROVE
    "mcp__*": REQUIRE_APPROVAL
mcp:
  servers:
    docs:
      url: http://127.0.0.1:9000/mcp
      ttl: 10m
    local:
      command: [docs-server, --stdio]
vision:
  url: http://127.0.0.1:9001/v1
  model: gpt-4o
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Workspace.Root != "/srv/ws" || c.Workspace.MaxFileBytes != config.DefaultMaxFileBytes {
		t.Errorf("got workspace %+v", c.Workspace)
	}
	if got := c.AgentPermissions().Check(ptr(parley.AgentPlanner), parley.PermReadFiles); got != nil {
		t.Errorf("planner read: got %v, want allowed", got)
	}
	if got := parley.ErrorCode(c.AgentPermissions().Check(ptr(parley.AgentReviewer), parley.PermReadFiles)); got != parley.EFORBIDDEN {
		t.Errorf("reviewer read: got %q, want forbidden", got)
	}
	pol := c.ToolPolicies()
	for name, want := range map[string]parley.ToolPolicy{
		"echo": parley.PolicyAutoApprove, "mcp__github__x": parley.PolicyRequireApproval, "rm": parley.PolicyDeny,
	} {
		if got, _ := pol.PolicyFor(name); got != want {
			t.Errorf("policy for %s: got %s, want %s", name, got, want)
		}
	}
	if got := c.MCP.Servers["docs"].TTL.Std(); got != 10*time.Minute {
		t.Errorf("docs ttl: got %s, want 10m", got)
	}
	if got := c.MCP.Servers["local"].TTL.Std(); got != config.DefaultMCPTTL {
		t.Errorf("local ttl: got %s, want the default %s", got, config.DefaultMCPTTL)
	}
}

func ptr[T any](v T) *T { return &v }

func TestParseErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml, wantKey string
	}{
		{"unknown key", "workspace:\n  rot: /x\n", "rot"},
		{"bad role", "agents:\n  JANITOR: [read_files]\n", "agents.JANITOR"},
		{"bad permission", "agents:\n  PLANNER: [fly]\n", "agents.PLANNER[0]"},
		{"bad policy", "tools:\n  policies:\n    echo: maybe\n", `tools.policies."echo"`},
		{"bad default", "tools:\n  default: sometimes\n", "tools.default"},
		{"server without transport", "mcp:\n  servers:\n    docs: {ttl: 1h}\n", "mcp.servers.docs"},
		{"server with both", "mcp:\n  servers:\n    docs: {url: 'http://x/mcp', command: [a]}\n", "mcp.servers.docs"},
		{"bad ttl", "mcp:\n  servers:\n    docs: {url: 'http://x/mcp', ttl: soon}\n", "ttl"},
		{"vision without model", "vision:\n  url: http://x/v1\n", "vision.model"},
		{"bad network", "fetch:\n  allow_networks: [intranet]\n", "fetch.allow_networks[0]"},
		{"bad detail", "vision:\n  detail: ultra\n", "vision.detail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.wantKey) {
				t.Errorf("got %v, want an error naming %s", err, tt.wantKey)
			}
		})
	}
}

func TestLoadRelativeRoot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "parley.yaml")
	if err := os.WriteFile(path, []byte("workspace:\n  root: ws\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "ws"); c.Workspace.Root != want {
		t.Errorf("got root %s, want %s", c.Workspace.Root, want)
	}
	if _, err := config.Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Errorf("got no error for a missing file")
	}
}

func TestDefault(t *testing.T) {
	t.Parallel()
	c := config.Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("the default configuration is invalid: %v", err)
	}
	if got, _ := c.ToolPolicies().PolicyFor("anything"); got != parley.PolicyRequireApproval {
		t.Errorf("default policy: got %s, want REQUIRE_APPROVAL", got)
	}
}
