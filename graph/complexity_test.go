package graph

import (
	"context"
	"fmt"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/parley-dev/parley/internal/selection"
)

// costOf returns operationComplexity of query with the server's complexity functions.
func costOf(t *testing.T, query string) int {
	t.Helper()
	cfg := Config{}
	complexityFuncs(&cfg.Complexity, Limits{}.withDefaults())
	es := NewExecutableSchema(cfg)
	doc, errs := gqlparser.LoadQuery(es.Schema(), query)
	if errs != nil {
		t.Fatalf("%s: %v", query, errs)
	}
	n, _ := operationComplexity(context.Background(), es, &graphql.OperationContext{Operation: doc.Operations[0], Variables: map[string]any{}})
	return n
}

// TestComplexityFixed: an operation's cost is remembered only when no variable goes into
// it (operationComplexity's fixed).
func TestComplexityFixed(t *testing.T) {
	t.Parallel()
	cfg := Config{}
	complexityFuncs(&cfg.Complexity, Limits{}.withDefaults())
	es := NewExecutableSchema(cfg)
	for _, tc := range []struct {
		name, query string
		fixed       bool
	}{
		{"no variables", `{ conversation(id: "c") { messages(first: 5) { edges { cursor } } } }`, true},
		{"a variable the cost does not read", `query($c: ID!) { conversation(id: $c) { messages(first: 5) { edges { cursor } } } }`, true},
		{"a page size in a variable", `query($n: Int) { conversation(id: "c") { messages(first: $n) { edges { cursor } } } }`, false},
		{"a page size in a fragment", `query($n: Int) { ...Q } fragment Q on Query { conversations(last: $n) { totalCount } }`, false},
		{"a complexity function's argument", `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, false},
	} {
		doc, errs := gqlparser.LoadQuery(es.Schema(), tc.query)
		if errs != nil {
			t.Fatalf("%s: %v", tc.name, errs)
		}
		if _, fixed := operationComplexity(context.Background(), es, &graphql.OperationContext{Operation: doc.Operations[0], Variables: map[string]any{}}); fixed != tc.fixed {
			t.Errorf("%s: fixed %v, want %v", tc.name, fixed, tc.fixed)
		}
	}
}

// TestComplexityWorstCase: a selection on the Message union costs what its most
// expensive variant's fragment costs, not the sum of them all; a connection's edges are
// weighed by the page size and its pageInfo and totalCount counted once.
func TestComplexityWorstCase(t *testing.T) {
	t.Parallel()
	page := func(n int, node string) string {
		return fmt.Sprintf(`{ conversation(id: "c") { messages(first: %d) { edges { node { %s } } } } }`, n, node)
	}
	// The node's selection, and each variant's fragment alone with the shared fields.
	cfg := Config{}
	complexityFuncs(&cfg.Complexity, Limits{}.withDefaults())
	es := NewExecutableSchema(cfg)
	doc, errs := gqlparser.LoadQuery(es.Schema(), `{ message(id: "m") {`+selection.MessageFields+`} }`)
	if errs != nil {
		t.Fatal(errs)
	}
	node := doc.Operations[0].SelectionSet[0].(*ast.Field).SelectionSet
	var shared, variants ast.SelectionSet
	for _, sel := range node {
		if f, ok := sel.(*ast.InlineFragment); ok && f.TypeCondition != "MessageBase" {
			variants = append(variants, f)
		} else {
			shared = append(shared, sel)
		}
	}
	if want := len(es.Schema().GetPossibleTypes(es.Schema().Types["Message"])); len(variants) != want {
		t.Fatalf("selection.MessageFields has %d variant fragments, want one per Message variant (%d)", len(variants), want)
	}
	w := &complexityWalker{ctx: context.Background(), es: es, schema: es.Schema(), memo: map[spreadKey]int{}}
	union := es.Schema().Types["Message"]
	full := w.selection(node, union)
	worst, sum := 0, 0
	for _, v := range variants {
		c := w.selection(append(shared[:len(shared):len(shared)], v), union)
		worst, sum = max(worst, c), sum+c
	}
	if full != worst {
		t.Errorf("every variant at once costs %d, want the costliest variant's %d (the sum would be %d)", full, worst, sum)
	}
	// Linear in the page size; pageInfo and totalCount once, not once per edge.
	one, thousand := costOf(t, page(1, selection.MessageFields)), costOf(t, page(1000, selection.MessageFields))
	perEdge := one - costOf(t, page(0, selection.MessageFields)) // first: 0 weighs one edge too
	if perEdge != 0 {
		t.Errorf("first: 0 and first: 1 differ by %d, want 0 (both weigh one edge)", perEdge)
	}
	edge := costOf(t, page(2, selection.MessageFields)) - one
	if got, want := thousand-one, 999*edge; got != want {
		t.Errorf("1000 edges cost %d more than 1, want 999 × %d = %d", got, edge, want)
	}
	withInfo := func(n int) int {
		return costOf(t, fmt.Sprintf(`{ conversation(id: "c") { messages(first: %d) { totalCount pageInfo { hasNextPage endCursor } edges { cursor } } } }`, n)) -
			costOf(t, fmt.Sprintf(`{ conversation(id: "c") { messages(first: %d) { edges { cursor } } } }`, n))
	}
	if a, b := withInfo(1), withInfo(1000); a != b || a != 4 {
		t.Errorf("totalCount and pageInfo { hasNextPage endCursor } cost %d on a page of 1 and %d on a page of 1000, want 4 both", a, b)
	}
	// The documented maximum page with every field fits the default limit; two do not.
	if thousand > DefaultMaxComplexity || 2*thousand <= DefaultMaxComplexity {
		t.Errorf("a full page of 1000 costs %d; want one within %d and two over it", thousand, DefaultMaxComplexity)
	}
}
