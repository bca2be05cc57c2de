package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/parley-dev/parley/config"
)

// loadServeConfig runs serve's flags over args and returns the configuration
// loadConfig makes of them.
func loadServeConfig(t *testing.T, args ...string) (config.Config, error) {
	t.Helper()
	var cfg config.Config
	var err error
	cmd := &cli.Command{
		Name:  "serve",
		Flags: append(append(flagsOf(config.Global), flagsOf(config.Database)...), flagsOf(config.Serve)...),
		Action: func(_ context.Context, cmd *cli.Command) error {
			cfg, err = loadConfig(cmd, config.Global, config.Database, config.Serve)
			return nil
		},
	}
	if runErr := cmd.Run(context.Background(), append([]string{"serve"}, args...)); runErr != nil {
		t.Fatalf("run %v: %v", args, runErr)
	}
	return cfg, err
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "parley.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Without flags, variables or a file, every setting has its declared default.
func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	got, err := loadServeConfig(t)
	if err != nil {
		t.Fatal(err)
	}
	want := config.Default()
	if got.Process != want.Process || got.Limits != want.Limits || *got.HTTP.Introspection != true {
		t.Errorf("got %+v %+v, want %+v %+v", got.Process, got.Limits, want.Process, want.Limits)
	}
	if got.Limits.MaxDepth != config.DefaultMaxDepth || got.Process.RequestTimeout != 3*time.Minute {
		t.Errorf("got max depth %d and request timeout %s, want %d and 3m", got.Limits.MaxDepth, got.Process.RequestTimeout, config.DefaultMaxDepth)
	}
}

// A flag wins over the file's key; keys no flag gives keep the file's value.
func TestConfigFlagsOverFile(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "limits:\n  max_depth: 7\n  max_aliases: 9\nhttp:\n  introspection: false\nworkspace:\n  root: /srv/a\n")
	tests := []struct {
		name                   string
		args                   []string
		wantDepth, wantAliases int
		wantIntrospection      bool
		wantRoot               string
		wantRequestTimeout     time.Duration
	}{
		{"file only", []string{"--config", path}, 7, 9, false, "/srv/a", 3 * time.Minute},
		{"flags over file", []string{"--config", path, "--max-depth", "5", "--introspection", "--workspace-root", "/srv/b", "--request-timeout", "0"},
			5, 9, true, "/srv/b", 0},
	}
	for _, tt := range tests {
		got, err := loadServeConfig(t, tt.args...)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got.Limits.MaxDepth != tt.wantDepth || got.Limits.MaxAliases != tt.wantAliases ||
			*got.HTTP.Introspection != tt.wantIntrospection || got.Workspace.Root != tt.wantRoot ||
			got.Process.RequestTimeout != tt.wantRequestTimeout {
			t.Errorf("%s: got depth %d, aliases %d, introspection %v, root %q, request timeout %s; want %d, %d, %v, %q, %s",
				tt.name, got.Limits.MaxDepth, got.Limits.MaxAliases, *got.HTTP.Introspection, got.Workspace.Root, got.Process.RequestTimeout,
				tt.wantDepth, tt.wantAliases, tt.wantIntrospection, tt.wantRoot, tt.wantRequestTimeout)
		}
	}
}

// A bad value given by a flag is refused naming the key it sets.
func TestConfigBadFlag(t *testing.T) {
	t.Parallel()
	_, err := loadServeConfig(t, "--max-page-size", "5000")
	if err == nil || !strings.Contains(err.Error(), "limits.max_page_size") {
		t.Errorf("got %v, want an error naming limits.max_page_size", err)
	}
}

// An environment variable wins over the file, and a flag over the variable. Not
// parallel: t.Setenv changes the process's environment.
func TestConfigEnvironment(t *testing.T) {
	path := writeConfig(t, "limits:\n  max_depth: 7\n")
	t.Setenv("PARLEY_MAX_DEPTH", "6")
	t.Setenv("PARLEY_ADDR", "127.0.0.1:9999")
	got, err := loadServeConfig(t, "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Limits.MaxDepth != 6 || got.Process.Addr != "127.0.0.1:9999" {
		t.Errorf("variable over file: got depth %d, addr %s; want 6, 127.0.0.1:9999", got.Limits.MaxDepth, got.Process.Addr)
	}
	if got, err = loadServeConfig(t, "--config", path, "--max-depth", "4"); err != nil {
		t.Fatal(err)
	}
	if got.Limits.MaxDepth != 4 {
		t.Errorf("flag over variable: got depth %d, want 4", got.Limits.MaxDepth)
	}
}
