package input_test

import (
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/internal/input"
)

func TestRead(t *testing.T) {
	t.Parallel()
	if got, err := input.Read(strings.NewReader("12345"), 5); err != nil || string(got) != "12345" {
		t.Errorf("at the limit: got %q, %v; want 12345", got, err)
	}
	_, err := input.Read(strings.NewReader("123456"), 5)
	if code := parley.ErrorCode(err); code != parley.EINVALID || !strings.Contains(err.Error(), "larger than 5 bytes") {
		t.Errorf("over the limit: got %v (%s), want EINVALID saying larger than 5 bytes", err, code)
	}
	broken := errors.New("broken")
	if _, err := input.Read(iotest.ErrReader(broken), 5); !errors.Is(err, broken) || parley.ErrorCode(err) == parley.EINVALID {
		t.Errorf("read error: got %v, want it wrapped, not EINVALID", err)
	}
}
