// Package recognize reads images: text by OCR with Tesseract, descriptions and text by
// a vision model behind an OpenAI-compatible chat completions endpoint, and the bytes
// of images given by URL, fetched within limits and away from private networks. It
// implements parley.OCR, parley.Vision and parley.ImageFetcher.
package recognize

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parley-dev/parley"
)

// Tesseract runs the tesseract command line program. The CLI rather than a cgo binding
// (gosseract): no C toolchain or -dev headers in the build, a crash or a runaway page
// stays in a child process that a timeout kills, and Debian's tesseract-ocr package is
// all it needs.
type Tesseract struct {
	// Command is the program (default "tesseract", found on PATH).
	Command string
	// Languages are the language models to use, joined by "+" (default "eng").
	Languages string
	// Timeout bounds one recognition (default 60s).
	Timeout time.Duration
	// MaxConcurrent bounds the tesseract processes running at once (default: the
	// number of CPUs); further recognitions wait for a slot, as long as their context
	// lets them.
	MaxConcurrent int
	// MaxMemory bounds each tesseract process's address space, on Linux (default
	// 1 GiB; an image within the pixel limit needs a few hundred MiB at most). The
	// pixel limit, checked before OCR runs, is the bound; this is the backstop.
	MaxMemory uint64

	slotsOnce sync.Once
	slots     chan struct{}
}

// DefaultOCRMemory is Tesseract.MaxMemory's default.
const DefaultOCRMemory = 1 << 30

// acquire waits for a slot to run tesseract in; release gives it back.
func (t *Tesseract) acquire(ctx context.Context) (release func(), err error) {
	t.slotsOnce.Do(func() {
		n := t.MaxConcurrent
		if n <= 0 {
			n = runtime.NumCPU()
		}
		t.slots = make(chan struct{}, n)
	})
	select {
	case t.slots <- struct{}{}:
		return func() { <-t.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

var _ parley.OCR = (*Tesseract)(nil)

func (t *Tesseract) command() string {
	if t.Command == "" {
		return "tesseract"
	}
	return t.Command
}

func (t *Tesseract) languages() string {
	if t.Languages == "" {
		return "eng"
	}
	return t.Languages
}

// Check reports whether the program runs and has the configured languages, so that a
// server can say at start what OCR will do.
func (t *Tesseract) Check(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, t.command(), "--list-langs").CombinedOutput()
	if err != nil {
		return fmt.Errorf("run %s --list-langs: %w (is tesseract-ocr installed?)", t.command(), err)
	}
	have := map[string]bool{}
	for _, l := range strings.Fields(string(out)) {
		have[l] = true
	}
	for _, l := range strings.Split(t.languages(), "+") {
		if !have[l] {
			return fmt.Errorf("tesseract has no %q language model (install tesseract-ocr-%s)", l, l)
		}
	}
	return nil
}

// run runs tesseract on img with args after the input and output names, and returns
// its standard output.
func (t *Tesseract) run(ctx context.Context, img []byte, args ...string) ([]byte, error) {
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	release, err := t.acquire(ctx) // waiting for a slot counts against the timeout
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, &parley.ProcessingError{Message: fmt.Sprintf("OCR was busy for longer than %s", timeout), Retryable: true}
		}
		return nil, err
	}
	defer release()
	cmd := exec.CommandContext(ctx, t.command(), append([]string{"stdin", "stdout"}, args...)...)
	cmd.Stdin = bytes.NewReader(img)
	// One thread: the server runs several recognitions side by side on few cores.
	cmd.Env = append(os.Environ(), "OMP_THREAD_LIMIT=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err = cmd.Start(); err == nil {
		maxMemory := t.MaxMemory
		if maxMemory == 0 {
			maxMemory = DefaultOCRMemory
		}
		// Set at once after the start, before tesseract has read its input: best
		// effort (where it fails, the pixel limit still holds).
		_ = limitMemory(cmd.Process.Pid, maxMemory)
		err = cmd.Wait()
	}
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return nil, &parley.ProcessingError{Message: fmt.Sprintf("OCR took longer than %s", timeout), Retryable: true}
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return nil, &parley.ProcessingError{Message: "OCR is unavailable: the tesseract program is not installed on this server"}
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return stdout.Bytes(), &parley.ProcessingError{Message: "OCR failed: " + lastLine(stderr.String())}
	}
	return stdout.Bytes(), nil
}

// Recognize implements parley.OCR: the text of the image's words, laid out by line
// and paragraph, their mean confidence, the languages used, and the script OSD detects.
func (t *Tesseract) Recognize(ctx context.Context, img parley.ImageData) (parley.OCRResult, error) {
	out, err := t.run(ctx, img.Bytes, "-l", t.languages(), "--psm", "3", "tsv")
	if err != nil {
		return parley.OCRResult{}, err
	}
	res := parseTSV(out)
	res.Language = t.languages()
	if res.Text != "" {
		res.Script = t.script(ctx, img.Bytes)
	}
	return res, nil
}

// script asks Tesseract's orientation and script detection (the osd model) which
// script the text is in; "" when it cannot tell (too little text, no osd model).
func (t *Tesseract) script(ctx context.Context, img []byte) string {
	out, err := t.run(ctx, img, "--psm", "0")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "Script:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// parseTSV reads Tesseract's TSV output: one row per page, block, paragraph, line and
// word (level 5), with the word's confidence (-1 for rows that are not words).
func parseTSV(out []byte) parley.OCRResult {
	var (
		sb               strings.Builder
		sum              float64
		words            int
		block, par, line = -1, -1, -1
		wroteOnThisLine  bool
		sc               = bufio.NewScanner(bytes.NewReader(out))
	)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for first := true; sc.Scan(); first = false {
		if first {
			continue // the header
		}
		f := strings.Split(sc.Text(), "\t")
		if len(f) < 12 || f[0] != "5" {
			continue
		}
		text := strings.TrimSpace(f[11])
		conf, err := strconv.ParseFloat(f[10], 64)
		if text == "" || err != nil || conf < 0 {
			continue
		}
		b, _ := strconv.Atoi(f[2])
		p, _ := strconv.Atoi(f[3])
		l, _ := strconv.Atoi(f[4])
		switch {
		case sb.Len() == 0:
		case b != block || p != par:
			sb.WriteString("\n\n")
		case l != line:
			sb.WriteString("\n")
		case wroteOnThisLine:
			sb.WriteString(" ")
		}
		block, par, line = b, p, l
		sb.WriteString(text)
		wroteOnThisLine = true
		sum += conf
		words++
	}
	res := parley.OCRResult{Text: sb.String()}
	if words > 0 {
		c := sum / float64(words) / 100
		res.Confidence = &c
	}
	return res
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return "tesseract exited with an error"
}
