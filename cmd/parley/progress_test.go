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

// TestExportProgressOnATerminal: with stderr a terminal, an export draws a bar counting
// the messages it reads to 100%, and stdout holds the transcript only.
func TestExportProgressOnATerminal(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	var rep bytes.Buffer
	if err := run(context.Background(), []string{"parley", "--log-level", "warn", "import", "--database-url", dsn, "--json",
		"--format", "CLAUDE_CODE_JSONL", "../../interop/claudecode/testdata/session.jsonl"}, &rep, io.Discard); err != nil {
		t.Fatal(err)
	}
	id := strings.Split(strings.Split(rep.String(), `"id": "`)[1], `"`)[0]
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	read := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(ptmx)
		read <- b
	}()
	var out bytes.Buffer
	err = run(context.Background(), []string{"parley", "--log-level", "warn", "export", "--database-url", dsn,
		"--format", "MARKDOWN", id}, &out, tty)
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
	if s := string(term); !strings.Contains(s, "exporting "+id) || !strings.Contains(s, "100%") || !strings.Contains(s, "14/14") {
		t.Errorf("the terminal shows no finished bar of 14 messages:\n%q", s)
	}
	if s := out.String(); !strings.HasPrefix(s, "#") && !strings.HasPrefix(s, "[") || strings.Contains(s, "100%") {
		t.Errorf("stdout holds more than the transcript:\n%s", s)
	}
}

// TestProgressPlainMessages: plain lines count messages for an export, and --json (quiet)
// writes none at all.
func TestProgressPlainMessages(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := newProgress(&buf, 200, "exporting conv_x", unitMessages, false)
	p.(*plainProgress).next = time.Now()
	p.Add(100)
	p.Add(100)
	p.Finish()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "exporting conv_x: 100 messages of 200 messages read (50%)") {
		t.Errorf("plain export progress: got\n%s", buf.String())
	}
	if _, quiet := newProgress(&buf, 200, "importing x", unitBytes, true).(noProgress); !quiet {
		t.Error("a quiet progress (--json) off a terminal would write lines")
	}
}
