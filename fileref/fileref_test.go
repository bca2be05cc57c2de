package fileref_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/fileref"
)

func ptr(n int) *int { return &n }

// workspace makes a workspace with a few files, and a secret file beside it.
func workspace(t *testing.T) (root, outside string) {
	t.Helper()
	dir := t.TempDir()
	root = filepath.Join(dir, "ws")
	outside = filepath.Join(dir, "secret.txt")
	must(t, os.MkdirAll(filepath.Join(root, "src"), 0o755))
	must(t, os.WriteFile(outside, []byte("top secret\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "src", "main.go"), []byte("package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "bin.dat"), []byte("ab\x00cd"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "latin1.txt"), []byte("caf\xe9\n"), 0o644))
	must(t, os.Symlink(outside, filepath.Join(root, "escape.txt")))
	must(t, os.Symlink(filepath.Join(root, "src", "main.go"), filepath.Join(root, "inside.go")))
	must(t, os.Symlink(dir, filepath.Join(root, "parent")))
	return root, outside
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestReadReference(t *testing.T) {
	t.Parallel()
	root, outside := workspace(t)
	ws := &fileref.Workspace{Root: root, MaxBytes: 1 << 20}
	tests := []struct {
		name       string
		path       string
		start, end *int
		want       string // content, when it succeeds
		wantErr    string // part of the stored failure's message
	}{
		{name: "relative", path: "src/main.go", want: "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"},
		{name: "absolute inside", path: filepath.Join(root, "src/main.go"), want: "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"},
		{name: "symlink inside", path: "inside.go", start: ptr(1), end: ptr(1), want: "1 | package main\n"},
		{name: "range", path: "src/main.go", start: ptr(3), end: ptr(4), want: "3 | func main() {\n4 | \tprintln(\"hi\")\n"},
		{name: "from line", path: "src/main.go", start: ptr(4), want: "4 | \tprintln(\"hi\")\n5 | }\n"},
		{name: "to line", path: "src/main.go", end: ptr(1), want: "1 | package main\n"},
		{name: "range past end", path: "src/main.go", start: ptr(9), end: ptr(12), wantErr: "has 5 lines"},
		{name: "end past end", path: "src/main.go", start: ptr(2), end: ptr(12), wantErr: "has only 5 lines"},
		{name: "inverted range", path: "src/main.go", start: ptr(3), end: ptr(2), wantErr: "not a range"},
		{name: "traversal", path: "src/../../secret.txt", wantErr: "traversal"},
		{name: "absolute outside", path: outside, wantErr: "outside the workspace"},
		{name: "symlink outside", path: "escape.txt", wantErr: "outside the workspace"},
		{name: "symlinked dir outside", path: "parent/secret.txt", wantErr: "outside the workspace"},
		{name: "missing", path: "nope.txt", wantErr: "no such file"},
		{name: "directory", path: "src", wantErr: "not a regular file"},
		{name: "binary", path: "bin.dat", wantErr: "binary"},
		{name: "not utf-8", path: "latin1.txt", wantErr: "not UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ws.ReadReference(context.Background(), tt.path, tt.start, tt.end)
			if tt.wantErr != "" {
				var pe *parley.ProcessingError
				if !errors.As(err, &pe) {
					t.Fatalf("got %v (content %q), want a stored failure containing %q", err, got.Content, tt.wantErr)
				}
				if !strings.Contains(pe.Message, tt.wantErr) {
					t.Errorf("got failure %q, want it to contain %q", pe.Message, tt.wantErr)
				}
				if strings.Contains(got.Content, "secret") {
					t.Errorf("content leaked: %q", got.Content)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want content", err)
			}
			if got.Content != tt.want {
				t.Errorf("got content %q, want %q", got.Content, tt.want)
			}
			if got.Truncated {
				t.Errorf("got truncated, want whole")
			}
		})
	}
}

func TestNoRoot(t *testing.T) {
	t.Parallel()
	ws := &fileref.Workspace{MaxBytes: 100}
	_, err := ws.ReadReference(context.Background(), "a.txt", nil, nil)
	var pe *parley.ProcessingError
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "no workspace root is configured") || pe.Retryable {
		t.Fatalf("got %v, want a non-retryable failure saying no root is configured", err)
	}
}

func TestTruncation(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var sb strings.Builder
	for i := 0; i < 100; i++ {
		sb.WriteString("line of ten\n"[:11] + "\n")
	}
	must(t, os.WriteFile(filepath.Join(root, "big.txt"), []byte(sb.String()), 0o644))
	ws := &fileref.Workspace{Root: root, MaxBytes: 100}
	tests := []struct {
		name       string
		start, end *int
		wantSize   int
	}{
		{name: "whole", wantSize: 1200},
		{name: "range", start: ptr(1), end: ptr(50), wantSize: 600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ws.ReadReference(context.Background(), "big.txt", tt.start, tt.end)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Truncated || got.OriginalSize != tt.wantSize || len(got.Content) > 100 {
				t.Errorf("got truncated=%v size=%d len=%d, want truncated, size %d, at most 100 bytes",
					got.Truncated, got.OriginalSize, len(got.Content), tt.wantSize)
			}
			if !strings.HasSuffix(got.Content, "\n") {
				t.Errorf("got %q, want whole lines", got.Content)
			}
		})
	}
}

func TestReadFileLimit(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "a.png"), make([]byte, 50), 0o644))
	ws := &fileref.Workspace{Root: root}
	if b, err := ws.ReadFile(context.Background(), "a.png", 50); err != nil || len(b) != 50 {
		t.Fatalf("got %d bytes, %v; want 50 bytes", len(b), err)
	}
	var pe *parley.ProcessingError
	if _, err := ws.ReadFile(context.Background(), "a.png", 49); !errors.As(err, &pe) {
		t.Fatalf("got %v, want a failure for a file over the limit", err)
	}
}

// TestLongLines: a line far longer than the read buffer is read in pieces: kept up to
// the content limit and cut there (flagged truncated, with the range's full size),
// characters split between pieces are whole, and invalid UTF-8 or a NUL far into a
// line is still found.
func TestLongLines(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	euros := strings.Repeat("€", 100_000) // 3 bytes each: pieces of 64 KiB split some
	must(t, os.WriteFile(filepath.Join(root, "long.txt"), []byte(euros+"\nshort\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "bad.txt"), []byte(euros+"\xff\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "nul.txt"), []byte("ok\n"+euros+"\x00\n"), 0o644))
	ws := &fileref.Workspace{Root: root, MaxBytes: 100}
	got, err := ws.ReadReference(context.Background(), "long.txt", ptr(1), ptr(2))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Truncated || got.OriginalSize != len(euros)+1+len("short")+1 || len(got.Content) > 100 ||
		!strings.HasPrefix(got.Content, "1 | €€€") || !utf8.ValidString(got.Content) {
		t.Errorf("got truncated=%v size=%d content %q, want the head of line 1, cut whole, size %d",
			got.Truncated, got.OriginalSize, got.Content, len(euros)+len("short")+2)
	}
	big := &fileref.Workspace{Root: root, MaxBytes: 1 << 20}
	if got, err := big.ReadReference(context.Background(), "long.txt", ptr(1), ptr(1)); err != nil ||
		got.Truncated || got.Content != "1 | "+euros+"\n" {
		t.Errorf("under the limit: got truncated=%v, %d bytes, %v; want the whole line", got.Truncated, len(got.Content), err)
	}
	for _, tt := range []struct{ file, want string }{{"bad.txt", "not UTF-8"}, {"nul.txt", "binary"}} {
		_, err := ws.ReadReference(context.Background(), tt.file, ptr(1), nil)
		var pe *parley.ProcessingError
		if !errors.As(err, &pe) || !strings.Contains(pe.Message, tt.want) {
			t.Errorf("%s: got %v, want a failure saying %q", tt.file, err, tt.want)
		}
	}
}
