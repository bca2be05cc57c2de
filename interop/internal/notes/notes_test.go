package notes_test

import (
	"slices"
	"testing"

	"github.com/parley-dev/parley/interop/internal/notes"
)

func TestNotes(t *testing.T) {
	t.Parallel()
	var n notes.Notes
	if got := n.List(); len(got) != 0 {
		t.Errorf("empty: got %q, want none", got)
	}
	for _, what := range []string{"b", "a", "b", "c", "b"} {
		n.Add(what)
	}
	if got, want := n.List(), []string{"b (3)", "a (1)", "c (1)"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
