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
	"syscall"
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
	f, info, err := openRegular(r, filepath.Clean(rel))
	if err != nil && strings.Contains(err.Error(), "escapes from parent") {
		// os.Root refuses absolute symlinks even when they point inside the root:
		// resolve them, and open the resolved path if it is inside (again through
		// os.Root, which refuses it should it have changed to lead out since).
		if real, rerr := filepath.EvalSymlinks(filepath.Join(root, rel)); rerr == nil {
			if inside, ierr := relInside(root, real); ierr == nil {
				f, info, err = openRegular(r, inside)
			}
		}
	}
	var notRegular *notRegularError
	switch {
	case errors.As(err, &notRegular):
		return nil, nil, fail(false, "%s is not a regular file (it is %s); only regular files can be read", name, notRegular.what())
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
	return f, info, nil
}

// notRegularError is a file that is not a regular file: a directory, a named pipe, a
// device, a socket.
type notRegularError struct{ mode fs.FileMode }

func (e *notRegularError) Error() string { return "not a regular file: " + e.mode.String() }

func (e *notRegularError) what() string {
	switch t := e.mode.Type(); {
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// openRegular opens name in r for reading if it is a regular file. Opening a named pipe
// blocks until a writer comes, forever if none does, holding an OS thread: so the file
// is looked at first, opened non-blocking (a pipe swapped in after the look opens at
// once instead of waiting), and looked at again through the open descriptor, which
// is what will be read.
func openRegular(r *os.Root, name string) (*os.File, fs.FileInfo, error) {
	info, err := r.Stat(name)
	if err != nil {
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, nil, &notRegularError{info.Mode()}
	}
	f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	if info, err = f.Stat(); err != nil {
		f.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, &notRegularError{info.Mode()}
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

// lineBuffer is the read buffer of line-range reads: a line longer than this comes in
// pieces, so memory stays bounded by it and the content limit, however long a line is.
const lineBuffer = 64 << 10

// readLines reads the lines first to last (-1: to the end), streaming: only the part
// of the range that fits in MaxBytes is kept, a line longer than that is cut (and the
// content flagged truncated), and the rest is read only to count its size and check
// that it is text.
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
	br := bufio.NewReaderSize(f, lineBuffer)
	var (
		lines     [][]byte // the kept lines of the range, at most MaxBytes in all
		kept      int64
		n, size   int  // lines seen; bytes of the range's lines, each with its line end
		inLine    bool // a line's first piece has been read, not its last
		truncated bool
		text      utf8Stream
	)
	for pieces := 0; ; pieces++ {
		if pieces%1024 == 0 && ctx.Err() != nil {
			return parley.FileContent{}, ctx.Err()
		}
		piece, more, err := br.ReadLine()
		if err == io.EOF {
			break
		} else if err != nil {
			return parley.FileContent{}, fail(true, "%s: read failed: %v", name, err)
		}
		if !inLine {
			n++
			if n >= first && (last == -1 || n <= last) {
				lines = append(lines, nil)
			}
		}
		inLine = more
		if bytes.IndexByte(piece, 0) >= 0 {
			return parley.FileContent{}, fail(false, "%s is a binary file (it contains NUL bytes); only text files can be referenced", name)
		}
		if n >= first && (last == -1 || n <= last) {
			if !text.write(piece) || (!more && !text.end()) {
				return parley.FileContent{}, fail(false, "%s is not UTF-8 text (line %d); only text files can be referenced", name, n)
			}
			size += len(piece)
			if !more {
				size++ // the line end
			}
			if room := w.MaxBytes - kept; room > 0 {
				part := piece[:min(int64(len(piece)), room)]
				lines[len(lines)-1] = append(lines[len(lines)-1], part...)
				kept += int64(len(part))
			}
			if kept >= w.MaxBytes && len(piece) > 0 {
				truncated = true
			}
		}
		if !more && last != -1 && n >= last {
			break
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
	width := len(fmt.Sprint(last))
	var sb strings.Builder
	out := parley.FileContent{Truncated: truncated}
	for i, line := range lines {
		numbered := fmt.Sprintf("%*d | %s\n", width, first+i, wholeRunes(line))
		if int64(sb.Len()+len(numbered)) > w.MaxBytes {
			out.Truncated = true
			if sb.Len() == 0 { // one huge line: keep its head
				sb.Write(cut([]byte(numbered), int(w.MaxBytes)))
			}
			break
		}
		sb.WriteString(numbered)
	}
	out.Content = sb.String()
	out.OriginalSize = size
	return out, nil
}

// wholeRunes returns b without a character cut short at its end (a line kept in part).
func wholeRunes(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// utf8Stream checks that text given in pieces is valid UTF-8, a character possibly
// split between pieces.
type utf8Stream struct {
	pending [utf8.UTFMax]byte // the start of a character the last piece cut short
	n       int
}

// write checks the next piece; false when the text is not UTF-8.
func (s *utf8Stream) write(p []byte) bool {
	for s.n > 0 && len(p) > 0 {
		s.pending[s.n] = p[0]
		s.n, p = s.n+1, p[1:]
		if utf8.FullRune(s.pending[:s.n]) {
			if !utf8.Valid(s.pending[:s.n]) {
				return false
			}
			s.n = 0
		}
	}
	if s.n > 0 {
		return true // p was all part of the pending character
	}
	tail := wholeRunes(p)
	if !utf8.Valid(tail) {
		return false
	}
	s.n = copy(s.pending[:], p[len(tail):])
	return true
}

// end reports whether the text ended on a whole character, and starts again.
func (s *utf8Stream) end() bool {
	ok := s.n == 0
	s.n = 0
	return ok
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
