package recognize_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/recognize"
)

// TestTesseractBounds: with MaxConcurrent 1, recognitions started together run their
// OCR processes one at a time, and each process runs under the MaxMemory address-space
// limit (on Linux) with OpenMP held to one thread. The OCR command is a script that
// records overlaps and its limits, standing in for tesseract.
func TestTesseractBounds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := fmt.Sprintf(`#!/bin/sh
cat > /dev/null
d=%q
if ! mkdir "$d/running" 2>/dev/null; then echo overlap >> "$d/overlaps"; fi
sleep 0.2 # the work, during which another run would overlap
echo "$(ulimit -v) $OMP_THREAD_LIMIT" >> "$d/runs"
rmdir "$d/running"
printf 'level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n'
`, dir)
	command := filepath.Join(dir, "ocr.sh")
	if err := os.WriteFile(command, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ocr := &recognize.Tesseract{Command: command, MaxConcurrent: 1, MaxMemory: 512 << 20}
	const n = 4
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := ocr.Recognize(context.Background(), parley.ImageData{Bytes: []byte("img"), MediaType: "image/png"}); err != nil {
				t.Errorf("recognize: %v", err)
			}
		})
	}
	wg.Wait()
	if b, err := os.ReadFile(filepath.Join(dir, "overlaps")); err == nil {
		t.Errorf("OCR processes overlapped %d times with MaxConcurrent 1", strings.Count(string(b), "overlap"))
	}
	b, err := os.ReadFile(filepath.Join(dir, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	runs := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(runs) != n {
		t.Fatalf("got %d runs, want %d", len(runs), n)
	}
	want := "unlimited 1"
	if runtime.GOOS == "linux" {
		want = fmt.Sprint(512<<10, " 1") // ulimit -v counts KiB
	}
	for _, r := range runs {
		if r != want {
			t.Errorf("a run had address-space limit and OMP_THREAD_LIMIT %q, want %q", r, want)
		}
	}
}
