// Package fileref reads files for file references, confined to a workspace root:
// relative paths resolve against the root, absolute paths and symlinks must land inside
// it, and a ".." segment is refused outright. It implements parley.FileReader.
package fileref

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/parley-dev/parley"
)

// Workspace reads files under Root.
type Workspace struct {
	// Root is the workspace directory; "" refuses every file.
	Root string
	// MaxBytes is the size above which content is truncated and flagged.
	MaxBytes int64
}

var _ parley.FileReader = (*Workspace)(nil)

// fail is a failure to store on the message; retryable says whether trying again can help.
func fail(retryable bool, format string, args ...any) error {
	return &parley.ProcessingError{Message: fmt.Sprintf(format, args...), Retryable: retryable}
}

// open opens name inside the workspace through os.Root, which refuses any path, symlink
// included, that leads outside the root (the kernel resolves each step, so a symlink
// swapped in mid-way cannot escape either).
func (w *Workspace) open(name string) (*os.File, fs.FileInfo, error) {
	if w.Root == "" {
		return nil, nil, fail(false, "no workspace root is configured, so %q cannot be read: set --workspace-root (PARLEY_WORKSPACE_ROOT) or workspace.root in the configuration", name)
	}
	for _, seg := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return nil, nil, fail(false, "%q contains a \"..\" segment; path traversal is not allowed", name)
		}
	}
	root, err := filepath.Abs(w.Root)
	if err != nil {
		return nil, nil, err
	}
	rel := name
	if filepath.IsAbs(name) {
		// An absolute path must name a place inside the root, as written or once the
		// root's own symlinks are resolved (/tmp vs /private/tmp).
		rel, err = relInside(root, filepath.Clean(name))
		if err != nil {
			return nil, nil, err
		}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, nil, fmt.Errorf("open workspace root %s: %w", root, err)
	}
	defer r.Close()
	f, err := r.Open(filepath.Clean(rel))
	if err != nil && strings.Contains(err.Error(), "escapes from parent") {
		// os.Root refuses absolute symlinks even when they point inside the root:
		// resolve them, and open the resolved path if it is inside (again through
		// os.Root, which refuses it should it have changed to lead out since).
		if real, rerr := filepath.EvalSymlinks(filepath.Join(root, rel)); rerr == nil {
			if inside, ierr := relInside(root, real); ierr == nil {
				f, err = r.Open(inside)
			}
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, fail(false, "%s: no such file in the workspace", name)
	case errors.Is(err, fs.ErrPermission):
		return nil, nil, fail(false, "%s: permission denied", name)
	case err != nil && strings.Contains(err.Error(), "escapes from parent"):
		return nil, nil, fail(false, "%s: the path leads outside the workspace (through a symlink)", name)
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, nil, fail(false, "%s: %v", name, pe.Err)
		}
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, fail(false, "%s is not a regular file", name)
	}
	return f, info, nil
}

func relInside(root, abs string) (string, error) {
	candidates := []string{root}
	if real, err := filepath.EvalSymlinks(root); err == nil && real != root {
		candidates = append(candidates, real)
	}
	for _, r := range candidates {
		rel, err := filepath.Rel(r, abs)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return rel, nil
		}
	}
	return "", fail(false, "%s is outside the workspace root", abs)
}

// ReadFile implements parley.FileReader.
func (w *Workspace) ReadFile(ctx context.Context, name string, max int64) ([]byte, error) {
	f, info, err := w.open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info.Size() > max {
		return nil, fail(false, "%s is %d bytes, more than the %d allowed", name, info.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fail(true, "%s: read failed: %v", name, err)
	}
	if int64(len(b)) > max {
		return nil, fail(false, "%s is more than the %d bytes allowed", name, max)
	}
	return b, nil
}

// ReadReference implements parley.FileReader. The whole file comes as it is; a line
// range comes with each line prefixed by its number ("  12 | text"). Content over
// MaxBytes is cut at a line (or character) boundary and flagged, with the full size.
// A file with NUL bytes or invalid UTF-8 is binary and refused.
func (w *Workspace) ReadReference(ctx context.Context, name string, start, end *int) (parley.FileContent, error) {
	f, info, err := w.open(name)
	if err != nil {
		return parley.FileContent{}, err
	}
	defer f.Close()
	if start == nil && end == nil {
		return w.readWhole(name, f, info.Size())
	}
	return w.readLines(ctx, name, f, start, end)
}

func (w *Workspace) readWhole(name string, f *os.File, size int64) (parley.FileContent, error) {
	b, err := io.ReadAll(io.LimitReader(f, w.MaxBytes+utf8.UTFMax))
	if err != nil {
		return parley.FileContent{}, fail(true, "%s: read failed: %v", name, err)
	}
	out := parley.FileContent{OriginalSize: int(size)}
	if int64(len(b)) > w.MaxBytes {
		b = cut(b, int(w.MaxBytes))
		out.Truncated = true
	}
	if err := checkText(name, b, out.Truncated); err != nil {
		return parley.FileContent{}, err
	}
	if out.Truncated {
		// Cut at the last line end, so the content holds whole lines only.
		if i := bytes.LastIndexByte(b, '\n'); i > 0 {
			b = b[:i+1]
		}
	} else {
		out.OriginalSize = len(b)
	}
	out.Content = string(b)
	return out, nil
}

func (w *Workspace) readLines(ctx context.Context, name string, f *os.File, start, end *int) (parley.FileContent, error) {
	first, last := 1, -1
	if start != nil {
		first = *start
	}
	if end != nil {
		last = *end
	}
	if first < 1 || (last != -1 && last < first) {
		return parley.FileContent{}, fail(false, "lines %d-%d: not a range of lines (1-indexed, end not before start)", first, last)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	var lines [][]byte
	n, size := 0, 0
	width := 0
	for {
		if n%4096 == 0 && ctx.Err() != nil {
			return parley.FileContent{}, ctx.Err()
		}
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			n++
			if bytes.IndexByte(line, 0) >= 0 {
				return parley.FileContent{}, fail(false, "%s is a binary file (it contains NUL bytes); only text files can be referenced", name)
			}
			if n >= first && (last == -1 || n <= last) {
				if !utf8.Valid(line) {
					return parley.FileContent{}, fail(false, "%s is not UTF-8 text (line %d); only text files can be referenced", name, n)
				}
				line = bytes.TrimRight(line, "\r\n")
				size += len(line) + 1
				if int64(size) <= w.MaxBytes*2 { // kept to number below; the rest only counted
					lines = append(lines, line)
				}
			}
		}
		if err == io.EOF || (last != -1 && n >= last) {
			break
		} else if err != nil {
			return parley.FileContent{}, fail(true, "%s: read failed: %v", name, err)
		}
	}
	if first > n {
		return parley.FileContent{}, fail(false, "lines %s: %s has %d lines, so line %d does not exist", rangeText(first, last), name, n, first)
	}
	if last > n {
		return parley.FileContent{}, fail(false, "lines %s: %s has only %d lines", rangeText(first, last), name, n)
	}
	if last == -1 {
		last = n
	}
	width = len(fmt.Sprint(last))
	var sb strings.Builder
	out := parley.FileContent{}
	for i, line := range lines {
		numbered := fmt.Sprintf("%*d | %s\n", width, first+i, line)
		if int64(sb.Len()+len(numbered)) > w.MaxBytes {
			out.Truncated = true
			if sb.Len() == 0 { // one huge line: keep its head
				sb.WriteString(string(cut([]byte(numbered), int(w.MaxBytes))))
			}
			break
		}
		sb.WriteString(numbered)
	}
	if int64(size) > w.MaxBytes*2 {
		out.Truncated = true
	}
	out.Content = sb.String()
	out.OriginalSize = size
	return out, nil
}

func rangeText(first, last int) string {
	if last == -1 {
		return fmt.Sprintf("%d-", first)
	}
	return fmt.Sprintf("%d-%d", first, last)
}

// checkText refuses binary content: NUL bytes, or invalid UTF-8 (allowing a character
// cut at the end of a truncated read).
func checkText(name string, b []byte, truncated bool) error {
	if bytes.IndexByte(b, 0) >= 0 {
		return fail(false, "%s is a binary file (it contains NUL bytes); only text files can be referenced", name)
	}
	if !utf8.Valid(b) {
		if !truncated || !utf8.Valid(cut(b, len(b)-utf8.UTFMax)) {
			return fail(false, "%s is not UTF-8 text; only text files can be referenced", name)
		}
	}
	return nil
}

// cut returns at most max bytes of b, not splitting a UTF-8 character.
func cut(b []byte, max int) []byte {
	if max < 0 {
		max = 0
	}
	if len(b) <= max {
		return b
	}
	for max > 0 && !utf8.RuneStart(b[max]) {
		max--
	}
	return b[:max]
}
