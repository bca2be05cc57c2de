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
// otherwise, so that a log shows a 200 MB import advancing. A command feeds it the bytes
// it has read (Write, as an io.TeeReader's writer) and calls Finish when done.
type progress interface {
	io.Writer
	Finish()
}

// plainProgressInterval is how often plain progress lines are written; the first comes
// after one interval, so quick commands print none.
const plainProgressInterval = 5 * time.Second

// newProgress returns the progress of reading total bytes (-1: unknown) for what (as
// "importing session.jsonl"), written to stderr.
func newProgress(stderr io.Writer, total int64, what string) progress {
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return &barProgress{bar: progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(f),
			progressbar.OptionSetDescription(what),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionFullWidth(),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(f) }),
		)}
	}
	now := time.Now()
	return &plainProgress{w: stderr, total: total, what: what, start: now, next: now.Add(plainProgressInterval)}
}

type barProgress struct{ bar *progressbar.ProgressBar }

func (p *barProgress) Write(b []byte) (int, error) { return p.bar.Write(b) }
func (p *barProgress) Finish()                     { _ = p.bar.Finish() }

type plainProgress struct {
	mu      sync.Mutex
	w       io.Writer
	total   int64
	done    int64
	what    string
	start   time.Time
	next    time.Time
	printed bool
}

func (p *plainProgress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += int64(len(b))
	if now := time.Now(); !now.Before(p.next) {
		p.line(now)
		p.next = now.Add(plainProgressInterval)
	}
	return len(b), nil
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
	if p.total > 0 {
		fmt.Fprintf(p.w, "%s: %s of %s read (%d%%), %s\n", p.what, mib(p.done), mib(p.total), p.done*100/p.total, elapsed)
		return
	}
	fmt.Fprintf(p.w, "%s: %s read, %s\n", p.what, mib(p.done), elapsed)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
