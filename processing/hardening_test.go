package processing_test

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image/png"
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

// bombPNG is a valid grey PNG of w x h black pixels: it compresses a thousandfold, so
// its bytes are few while decoding it takes w*h bytes and Tesseract several times that.
// Compressing the 900 MB of a 30000x30000 one takes minutes under -race, so the zlib
// stream is made of one compressed run of rows, repeated: deflate blocks that end on a
// flush are independent and may follow each other, and the Adler-32 of n zero bytes is
// n mod 65521 in its high half and 1 in its low.
func bombPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&buf, binary.BigEndian, uint32(len(data)))
		crc := crc32.NewIEEE()
		crc.Write([]byte(typ))
		crc.Write(data)
		buf.WriteString(typ)
		buf.Write(data)
		binary.Write(&buf, binary.BigEndian, crc.Sum32())
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8] = 8 // bit depth; colour type 0 (grey), deflate, no filter, no interlace
	chunk("IHDR", ihdr)
	rows := h
	if h%100 == 0 {
		rows = 100
	}
	var unit bytes.Buffer
	fw, err := flate.NewWriter(&unit, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(make([]byte, rows*(w+1))) // each row: filter byte 0, then black pixels
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	idat := []byte{0x78, 0xda}
	for range h / rows {
		idat = append(idat, unit.Bytes()...)
	}
	idat = append(idat, 0x01, 0x00, 0x00, 0xff, 0xff) // an empty final stored block
	idat = binary.BigEndian.AppendUint32(idat, uint32(h*(w+1)%65521)<<16|1)
	chunk("IDAT", idat)
	chunk("IEND", nil)
	return buf.Bytes()
}

// TestImageBomb: an image over the pixel limit (50 megapixels) is refused from its
// header with IMAGE_TOO_LARGE, fast, without Tesseract ever starting (the configured
// OCR command records each start), and nothing is stored on the message; an image
// within the limit is recognized by the same command.
func TestImageBomb(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	ocr := filepath.Join(dir, "ocr.sh")
	script := fmt.Sprintf("#!/bin/sh\necho >> %q\nexec tesseract \"$@\"\n", started)
	if err := os.WriteFile(ocr, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e := start(t, fmt.Sprintf("ocr: {command: %q}\n", ocr))
	conv := e.CreateConversation(t, "bombs")

	// The helper's repeated runs of rows make a PNG that decodes.
	if img, err := png.Decode(bytes.NewReader(bombPNG(t, 3000, 300))); err != nil || img.Bounds().Dx() != 3000 || img.Bounds().Dy() != 300 {
		t.Fatalf("bombPNG(3000, 300) does not decode as a 3000x300 PNG: %v", err)
	}
	bomb := bombPNG(t, 30000, 30000)
	t.Logf("a 30000x30000 PNG: %d bytes", len(bomb))
	id := e.AddMessage(t, conv, map[string]any{"image": map[string]any{
		"base64": base64.StdEncoding.EncodeToString(bomb), "mediaType": "image/png"}}).ID
	begin := time.Now()
	r := e.Do(t, recognizeMutation, map[string]any{"m": id, "mode": "OCR"})
	took := time.Since(begin)
	if code := r.ErrorCode(t); code != "IMAGE_TOO_LARGE" || !strings.Contains(r.Errors[0].Message, "30000x30000 is 900000000 pixels, more than the 50000000 allowed") {
		t.Fatalf("got %s %q, want IMAGE_TOO_LARGE naming the size and the limit", code, r.Errors[0].Message)
	}
	t.Logf("refused in %s", took)
	if took > 5*time.Second {
		t.Errorf("the refusal took %s, want well under 5s", took)
	}
	if _, err := os.Stat(started); !os.IsNotExist(err) {
		t.Errorf("tesseract was started for an image over the limit (%v)", err)
	}
	var node struct {
		Node struct{ Recognition *recognition }
	}
	e.MustDo(t, `query($id: ID!) { node(id: $id) { ... on ImageMessage { recognition { status } } } }`, map[string]any{"id": id}, &node)
	if node.Node.Recognition != nil {
		t.Errorf("got recognition %+v stored, want none", node.Node.Recognition)
	}

	// Within the limit, the same command runs.
	small := bombPNG(t, 200, 100)
	id = e.AddMessage(t, conv, map[string]any{"image": map[string]any{
		"base64": base64.StdEncoding.EncodeToString(small), "mediaType": "image/png"}}).ID
	var out struct {
		RecognizeImage struct{ Recognition *recognition }
	}
	e.MustDo(t, recognizeMutation, map[string]any{"m": id, "mode": "OCR"}, &out)
	if rec := out.RecognizeImage.Recognition; rec == nil || rec.Status != "COMPLETED" {
		t.Errorf("an image within the limit: got %+v, want it recognized", rec)
	}
	if _, err := os.Stat(started); err != nil {
		t.Errorf("tesseract did not start for an image within the limit: %v", err)
	}
}
