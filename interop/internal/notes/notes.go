// Package notes collects what an export format could not carry, for the report that
// goes with the export.
package notes

import "fmt"

// Notes counts notes by kind, in the order first seen. The zero value is ready.
type Notes struct {
	order  []string
	counts map[string]int
}

// Add counts one note of the kind what.
func (n *Notes) Add(what string) {
	if n.counts == nil {
		n.counts = make(map[string]int)
	}
	if n.counts[what] == 0 {
		n.order = append(n.order, what)
	}
	n.counts[what]++
}

// List returns each kind with its count, "what (3)", in the order first seen.
func (n *Notes) List() []string {
	out := make([]string, len(n.order))
	for i, what := range n.order {
		out[i] = fmt.Sprintf("%s (%d)", what, n.counts[what])
	}
	return out
}
