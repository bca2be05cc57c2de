package processing_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestImageFetchFailureRevealsNothing: a fetch that fails below HTTP (here a refused
// connection) is stored as "could not fetch the image from HOST", retryable, without the
// dial error, the server's addresses or its resolver (those go to the log).
func TestImageFetchFailureRevealsNothing(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close() // nothing listens there now: the connection is refused
	e := start(t, "fetch: {allow_networks: [127.0.0.0/8], timeout: 10s}\n")
	conv := e.CreateConversation(t, "fetch")
	id := e.AddMessage(t, conv, map[string]any{"image": map[string]any{"url": "http://" + closed + "/scan.png"}}).ID
	var out struct {
		RecognizeImage struct{ Recognition *recognition }
	}
	e.MustDo(t, recognizeMutation, map[string]any{"m": id, "mode": "OCR"}, &out)
	r := out.RecognizeImage.Recognition
	if r == nil || r.Status != "FAILED" || r.Error == nil {
		t.Fatalf("got %+v, want a stored failure", r)
	}
	if want := "could not fetch the image from " + closed; r.Error.Message != want || !r.Error.Retryable {
		t.Errorf("got %q (retryable %v), want %q, retryable", r.Error.Message, r.Error.Retryable, want)
	}
	for _, leak := range []string{"dial", "tcp", "connect", "refused", "lookup"} {
		if strings.Contains(r.Error.Message, leak) {
			t.Errorf("the stored failure %q says %q", r.Error.Message, leak)
		}
	}
}

// TestFileReferenceToANamedPipe: a named pipe in the workspace is refused at once, as
// a stored failure saying what it is, where opening it used to wait for a writer
// forever, holding the request and an OS thread.
func TestFileReferenceToANamedPipe(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	if err := os.Symlink("pipe", filepath.Join(ws, "link-to-pipe")); err != nil {
		t.Fatal(err)
	}
	e := start(t, fmt.Sprintf("workspace: {root: %q}\n", ws))
	conv := e.CreateConversation(t, "pipes")
	for _, path := range []string{"pipe", "link-to-pipe"} {
		id := e.fileRef(t, conv, path, nil, 3)
		done := make(chan *resolution, 1)
		go func() {
			var out struct{ ResolveFileReference fileRefNode }
			if r := e.Do(t, resolveMutation, map[string]any{"m": id}); len(r.Errors) == 0 {
				if err := json.Unmarshal(r.Data, &out); err == nil {
					done <- out.ResolveFileReference.Resolution
					return
				}
			}
			done <- nil
		}()
		select {
		case r := <-done:
			if r == nil || r.Status != "FAILED" || r.Error == nil || !strings.Contains(r.Error.Message, "is not a regular file (it is a named pipe)") {
				t.Errorf("%s: got %+v, want a stored failure saying it is a named pipe", path, r)
			}
		case <-time.After(wait):
			t.Fatalf("%s: resolveFileReference did not answer within %s", path, wait)
		}
	}
}

// TestHugeLineMemory: a line range over a file whose first line is 128 MiB costs memory
// bounded by the read buffer and the content limit, not by the line: the content is
// the line's head, flagged truncated, with the range's full size. Not parallel: the
// allocation is measured for the whole process.
func TestHugeLineMemory(t *testing.T) {
	ws := t.TempDir()
	const lineBytes = 128 << 20
	f, err := os.Create(filepath.Join(ws, "huge.txt"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := []byte(strings.Repeat("abcdefgh", 1<<17)) // 1 MiB
	for range lineBytes / len(chunk) {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.WriteString("\nsecond line\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	e := start(t, fmt.Sprintf("workspace: {root: %q}\n", ws)) // max_file_bytes: 1 MiB
	conv := e.CreateConversation(t, "huge")
	id := e.fileRef(t, conv, "huge.txt", 1, 2)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	started := time.Now()
	var out struct{ ResolveFileReference fileRefNode }
	e.MustDo(t, resolveMutation, map[string]any{"m": id}, &out)
	took := time.Since(started)
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("a line range over a %d MiB line: %.1f MiB allocated, %s", lineBytes>>20, float64(allocated)/(1<<20), took)

	r := out.ResolveFileReference.Resolution
	if r == nil || r.Status != "COMPLETED" || !r.Truncated || r.OriginalSize == nil || *r.OriginalSize != lineBytes+len("\nsecond line\n") ||
		r.Content == nil || !strings.HasPrefix(*r.Content, "1 | abcdefgh") || len(*r.Content) > 1<<20 {
		t.Fatalf("got %+v, want the first line's head, truncated, with the size of both lines", r)
	}
	// Reading the line whole took twice its size (1.6 GiB for an 800 MB line); now the
	// read buffer, the kept MiB and the response's copies of it.
	if limit := uint64(64 << 20); allocated > limit {
		t.Errorf("allocated %d MiB for one request, want at most %d MiB", allocated>>20, limit>>20)
	}
}
