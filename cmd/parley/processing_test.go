package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bad configuration stops serve before it touches a database, naming the bad key.
func TestServeRefusesBadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name, file, want string
	}{
		{"bad policy", "tools:\n  policies:\n    rm: sometimes\n", `tools.policies."rm"`},
		{"unknown key", "mcp:\n  servrs: {}\n", "servrs"},
		{"missing file", "", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".yaml")
			if tt.file != "" {
				if err := os.WriteFile(path, []byte(tt.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"parley", "serve", "--config", path, "--database-url", "postgres://127.0.0.1:1/none"}, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error naming %s", err, tt.want)
			}
		})
	}
}
