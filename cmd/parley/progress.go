package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress tells a person how far a long command has got, on stderr only (stdout
// carries the data a pipe reads): a bar on a terminal, drawn by progressbar (a
// maintained library: widths, rates, the time left), plain lines every few seconds
// otherwise, so that a log shows a 200 MB import advancing. A command feeds it what it
// has done: the bytes it has read (Write, as an io.TeeReader's writer), or a count of
// messages (Add), and calls Finish when done.
type progress interface {
	io.Writer
	Add(n int)
	Finish()
}

// unit is what a progress counts.
type unit int

const (
	unitBytes unit = iota
	unitMessages
)

// noProgress shows nothing.
type noProgress struct{}

func (noProgress) Write(b []byte) (int, error) { return len(b), nil }
func (noProgress) Add(int)                     {}
func (noProgress) Finish()                     {}

// plainProgressInterval is how often plain progress lines are written; the first comes
// after one interval, so quick commands print none.
const plainProgressInterval = 5 * time.Second

// newProgress returns the progress of doing total units (-1: unknown) of what (as
// "importing session.jsonl"), written to stderr. Plain lines are left out when quiet
// (--json: a script runs the command, and reads its own progress from nowhere).
func newProgress(stderr io.Writer, total int64, what string, u unit, quiet bool) progress {
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(f),
			progressbar.OptionSetDescription(what),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100 * time.Millisecond),
			progressbar.OptionFullWidth(),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(f) }),
		}
		if u == unitBytes {
			opts = append(opts, progressbar.OptionShowBytes(true))
		} else {
			opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionSetItsString("msg"), progressbar.OptionShowIts())
		}
		return &barProgress{bar: progressbar.NewOptions64(total, opts...)}
	}
	if quiet {
		return noProgress{}
	}
	now := time.Now()
	return &plainProgress{w: stderr, total: total, what: what, unit: u, start: now, next: now.Add(plainProgressInterval)}
}

type barProgress struct{ bar *progressbar.ProgressBar }

func (p *barProgress) Write(b []byte) (int, error) { return p.bar.Write(b) }
func (p *barProgress) Add(n int)                   { _ = p.bar.Add(n) }
func (p *barProgress) Finish()                     { _ = p.bar.Finish() }

type plainProgress struct {
	mu      sync.Mutex
	w       io.Writer
	total   int64
	done    int64
	what    string
	unit    unit
	start   time.Time
	next    time.Time
	printed bool
}

func (p *plainProgress) Write(b []byte) (int, error) {
	p.Add(len(b))
	return len(b), nil
}

func (p *plainProgress) Add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += int64(n)
	if now := time.Now(); !now.Before(p.next) {
		p.line(now)
		p.next = now.Add(plainProgressInterval)
	}
}

// Finish writes the last line, when earlier ones were written.
func (p *plainProgress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.printed {
		p.line(time.Now())
	}
}

func (p *plainProgress) line(now time.Time) {
	p.printed = true
	elapsed := now.Sub(p.start).Round(100 * time.Millisecond)
	amount := mib
	if p.unit == unitMessages {
		amount = messages
	}
	if p.total > 0 {
		fmt.Fprintf(p.w, "%s: %s of %s read (%d%%), %s\n", p.what, amount(p.done), amount(p.total), p.done*100/p.total, elapsed)
		return
	}
	fmt.Fprintf(p.w, "%s: %s read, %s\n", p.what, amount(p.done), elapsed)
}

func messages(n int64) string { return fmt.Sprintf("%d messages", n) }

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
