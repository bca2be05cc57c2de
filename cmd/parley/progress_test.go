package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/parley-dev/parley/internal/pgtest"
)

// TestImportProgressOnATerminal: with stderr a terminal (a pseudo-terminal here), an
// import draws a progress bar there that reaches 100%, and stdout holds the report only.
func TestImportProgressOnATerminal(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	read := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(ptmx) // until the terminal's side is closed
		read <- b
	}()
	var out bytes.Buffer
	err = run(context.Background(), []string{"parley", "--log-level", "warn", "import", "--database-url", dsn,
		"--format", "claude-code-jsonl", "../../interop/claudecode/testdata/session.jsonl"}, &out, tty)
	tty.Close()
	if err != nil {
		t.Fatal(err)
	}
	var term []byte
	select {
	case term = <-read:
	case <-time.After(time.Minute):
		t.Fatal("the terminal's output did not end")
	}
	if s := string(term); !strings.Contains(s, "importing session.jsonl") || !strings.Contains(s, "100%") {
		t.Errorf("the terminal shows no finished progress bar:\n%q", s)
	}
	if s := out.String(); !strings.HasPrefix(s, "conv_") || strings.Contains(s, "%") {
		t.Errorf("stdout holds more than the report:\n%s", s)
	}
}

// TestImportProgressPlain: with stderr not a terminal, a quick import writes no
// progress at all, and a slow one (plain lines are due every few seconds) writes lines.
func TestImportProgressPlain(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := newProgress(&buf, 1000, "importing x.jsonl", unitBytes, false)
	p.Write(make([]byte, 400))
	p.Finish()
	if buf.Len() != 0 {
		t.Errorf("a quick read printed progress: %q", buf.String())
	}
	buf.Reset()
	p = newProgress(&buf, 1000, "importing x.jsonl", unitBytes, false)
	p.(*plainProgress).next = time.Now() // as if an interval had passed
	p.Write(make([]byte, 500))
	p.Write(make([]byte, 500))
	p.Finish()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "(50%)") || !strings.Contains(lines[1], "(100%)") || !strings.HasPrefix(lines[0], "importing x.jsonl: ") {
		t.Errorf("plain progress: got\n%s", buf.String())
	}
}
