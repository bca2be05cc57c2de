package graph

import (
	"context"
	"fmt"
	"math"

	"github.com/99designs/gqlgen/complexity"
	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/lexer"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/transport"
)

// Limits bound what one operation may ask for. Each is checked before anything runs,
// with fragments followed (a fragment spread counts as what it spreads, however often),
// and answers with its own extensions.code. Zero fields take the defaults below.
type Limits struct {
	// MaxDepth bounds how deeply fields nest (QUERY_TOO_DEEP). Introspection fields
	// (__schema, __type) are bounded by MaxIntrospectionDepth instead.
	MaxDepth int
	// MaxAliases bounds the aliased fields of an operation (TOO_MANY_ALIASES).
	MaxAliases int
	// MaxComplexity bounds the operation's cost (QUERY_TOO_COMPLEX): each field costs 1
	// plus its children, and a list costs its children times its page size (first or
	// last, else the default page size; ids for nodes), so a page of pages is costed
	// as what it can return.
	MaxComplexity int
	// MaxPageSize bounds first, last and nodes' ids (PAGE_TOO_LARGE); at most
	// parley.MaxPageSize, the store's own ceiling.
	MaxPageSize int
	// MaxTokens bounds the tokens of a query document (TOO_MANY_TOKENS), checked
	// before it is parsed.
	MaxTokens int
	// MaxSelections bounds the selections of a query document, fragments counted as
	// what they spread each time they are spread (TOO_MANY_SELECTIONS), checked after
	// parsing and before validation: validation compares the fields of a selection set
	// pairwise, so 15,000 tokens of one field repeated cost a minute of CPU to validate.
	MaxSelections int
	// MaxSubscriptionsPerConnection bounds the subscriptions open at once on one
	// websocket (TOO_MANY_SUBSCRIPTIONS).
	MaxSubscriptionsPerConnection int
	// MaxPageBytes bounds the bytes of stored messages (parley.MessageBytes) that the
	// message pages of one response hold together: a page that would pass it ends
	// early, with hasNextPage (hasPreviousPage, backwards) true and its cursors at what
	// it holds, and every page holds at least one message.
	MaxPageBytes int
}

// The default limits.
const (
	DefaultMaxDepth                      = 12
	DefaultMaxAliases                    = 30
	DefaultMaxComplexity                 = 50000
	DefaultMaxTokens                     = 15000
	DefaultMaxSelections                 = 1000
	DefaultMaxSubscriptionsPerConnection = 50
	DefaultMaxPageBytes                  = 16 << 20
	// MaxIntrospectionDepth is how deeply the lists of introspection types may nest
	// (fields, inputFields, interfaces, possibleTypes), as graphql-js's
	// MaxIntrospectionDepthRule has it: the standard introspection query nests two,
	// and each level more multiplies the answer by the schema's size.
	MaxIntrospectionDepth = 3
)

func (l Limits) withDefaults() Limits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxAliases <= 0 {
		l.MaxAliases = DefaultMaxAliases
	}
	if l.MaxComplexity <= 0 {
		l.MaxComplexity = DefaultMaxComplexity
	}
	if l.MaxPageSize <= 0 || l.MaxPageSize > parley.MaxPageSize {
		l.MaxPageSize = parley.MaxPageSize
	}
	if l.MaxTokens <= 0 {
		l.MaxTokens = DefaultMaxTokens
	}
	if l.MaxPageBytes <= 0 {
		l.MaxPageBytes = DefaultMaxPageBytes
	}
	if l.MaxSelections <= 0 {
		l.MaxSelections = DefaultMaxSelections
	}
	if l.MaxSubscriptionsPerConnection <= 0 {
		l.MaxSubscriptionsPerConnection = DefaultMaxSubscriptionsPerConnection
	}
	return l
}

// The error codes of the limits.
const (
	codeTooDeep               = "QUERY_TOO_DEEP"
	codeTooManyAliases        = "TOO_MANY_ALIASES"
	codeTooComplex            = "QUERY_TOO_COMPLEX"
	codePageTooLarge          = "PAGE_TOO_LARGE"
	codeTooManyTokens         = "TOO_MANY_TOKENS"
	codeTooManySelections     = "TOO_MANY_SELECTIONS"
	codeTooManySubscriptions  = "TOO_MANY_SUBSCRIPTIONS"
	codeIntrospectionDisabled = "INTROSPECTION_DISABLED"
	codeIntrospectionTooDeep  = "INTROSPECTION_TOO_DEEP"
)

// complexityFuncs weights the list fields of the schema by their page size.
func complexityFuncs(c *ComplexityRoot, l Limits) {
	page := func(child int, first, last *int) int {
		n := parley.DefaultPageSize
		if first != nil {
			n = *first
		} else if last != nil {
			n = *last
		}
		return weigh(child, n)
	}
	c.Query.Conversations = func(child int, first *int, _ *string, last *int, _ *string) int {
		return page(child, first, last)
	}
	c.Conversation.Messages = func(child int, first *int, _ *string, last *int, _ *string) int {
		return page(child, first, last)
	}
	c.Query.Nodes = func(child int, ids []string) int { return weigh(child, len(ids)) }
	c.Query.ToolCallsAwaitingResult = func(child int, _ *string, _ []string, _ *bool, first *int) int {
		return page(child, first, nil)
	}
	// An export reads the whole history, a page of the largest size at a time.
	c.Conversation.Transcript = func(child int, _ parley.TranscriptFormat, _ *string, _ *int, _ *bool, _ *string, _ *parley.ForeignReasoning) int {
		return weigh(child, l.MaxPageSize)
	}
	c.Conversation.TranscriptReport = func(child int, _ parley.TranscriptFormat, _ *string, _ *int, _ *bool, _ *string, _ *parley.ForeignReasoning) int {
		return weigh(child, l.MaxPageSize)
	}
}

// weigh is the cost of n elements costing child each, plus the field's own 1, without
// overflowing.
func weigh(child, n int) int {
	if n < 1 {
		n = 1
	}
	if child < 1 {
		child = 1
	}
	if child > (math.MaxInt-1)/n {
		return math.MaxInt
	}
	return 1 + child*n
}

// limitsExtension checks Limits (and that introspection is allowed) for every
// operation, over HTTP, websockets and SSE alike.
type limitsExtension struct {
	limits        Limits
	introspection bool
	es            graphql.ExecutableSchema
	// counted remembers documents whose selections were counted and found within
	// MaxSelections, so that a client's usual queries are parsed once here.
	counted *lru.LRU[bool]
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
	graphql.OperationContextMutator
	graphql.OperationInterceptor
} = (*limitsExtension)(nil)

func (*limitsExtension) ExtensionName() string { return "Limits" }

func (e *limitsExtension) Validate(es graphql.ExecutableSchema) error {
	e.es = es
	e.counted = lru.New[bool](1000)
	return nil
}

func limitError(code, format string, args ...any) *gqlerror.Error {
	return &gqlerror.Error{Message: fmt.Sprintf(format, args...), Extensions: map[string]any{"code": code}}
}

// MutateOperationParameters bounds what gqlgen's parser and validator will do with the
// document: it counts its tokens before it is parsed, and its selections before it is
// validated.
func (e *limitsExtension) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if err := e.countTokens(p.Query); err != nil {
		return err
	}
	return e.countSelections(ctx, p.Query)
}

// countSelections parses the document (in time linear in its tokens) and counts its
// selections: every field, inline fragment and fragment spread of its operations, a
// spread counting what its fragment holds each time (memoized per fragment, so
// counting costs the document's size), and each fragment definition once more. Too
// many is TOO_MANY_SELECTIONS, before gqlgen's validator sees the document. A document
// that does not parse is left to gqlgen, which reports why.
func (e *limitsExtension) countSelections(ctx context.Context, query string) *gqlerror.Error {
	if query == "" {
		return nil
	}
	if _, ok := e.counted.Get(ctx, query); ok {
		return nil
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: query}, e.limits.MaxTokens)
	if err != nil {
		return nil
	}
	c := selectionCounter{doc: doc, memo: map[string]int{}}
	n := 0
	for _, op := range doc.Operations {
		n = satAdd(n, c.selectionSet(op.SelectionSet))
	}
	for _, f := range doc.Fragments {
		n = satAdd(n, c.fragment(f.Name))
	}
	if n > e.limits.MaxSelections {
		return limitError(codeTooManySelections, "the document has %d selections (fields and fragments, a fragment counted each time it is spread); at most %d allowed",
			n, e.limits.MaxSelections)
	}
	e.counted.Add(ctx, query, true)
	return nil
}

// selectionCounter counts selections as countSelections says.
type selectionCounter struct {
	doc  *ast.QueryDocument
	memo map[string]int // -1: being counted (a cycle, which validation refuses)
}

func (c *selectionCounter) selectionSet(ss ast.SelectionSet) int {
	n := len(ss)
	for _, sel := range ss {
		switch s := sel.(type) {
		case *ast.Field:
			n = satAdd(n, c.selectionSet(s.SelectionSet))
		case *ast.InlineFragment:
			n = satAdd(n, c.selectionSet(s.SelectionSet))
		case *ast.FragmentSpread:
			n = satAdd(n, c.fragment(s.Name))
		}
	}
	return n
}

func (c *selectionCounter) fragment(name string) int {
	if n, ok := c.memo[name]; ok {
		return max(n, 0)
	}
	def := c.doc.Fragments.ForName(name)
	if def == nil {
		return 0
	}
	c.memo[name] = -1
	n := c.selectionSet(def.SelectionSet)
	c.memo[name] = n
	return n
}

// countTokens counts the document's tokens before gqlgen parses it. A token is at
// least one byte, so a document shorter than the limit needs no counting. (gqlgen's
// own parser limit, set to the same number, stays as a backstop.)
func (e *limitsExtension) countTokens(query string) *gqlerror.Error {
	if len(query) <= e.limits.MaxTokens {
		return nil
	}
	lx := lexer.New(&ast.Source{Input: query})
	for n := 0; ; n++ {
		tok, err := lx.ReadToken()
		if err != nil {
			return nil // the parser reports it
		}
		if tok.Kind == lexer.EOF {
			return nil
		}
		if n >= e.limits.MaxTokens {
			return limitError(codeTooManyTokens, "the document has more than %d tokens", e.limits.MaxTokens)
		}
	}
}

// MutateOperationContext checks the operation, which has parsed and validated, before
// it runs.
func (e *limitsExtension) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil {
		return nil
	}
	w := &opWalker{doc: op.Doc, vars: op.Variables, limits: e.limits, introspection: e.introspection,
		memo: map[string]*cost{}, introMemo: map[introKey]bool{}}
	c := w.selectionSet(op.Operation.SelectionSet)
	switch {
	case w.err != nil:
		return w.err
	case c.depth > e.limits.MaxDepth:
		return limitError(codeTooDeep, "the operation nests fields %d deep; at most %d allowed", c.depth, e.limits.MaxDepth)
	case c.aliases > e.limits.MaxAliases:
		return limitError(codeTooManyAliases, "the operation has %d aliases; at most %d allowed", c.aliases, e.limits.MaxAliases)
	case c.fields > e.limits.MaxComplexity:
		// Every field costs at least 1: no need to weigh it further (gqlgen's
		// calculation follows each spread of a fragment again, and this one need not).
		return limitError(codeTooComplex, "the operation has complexity over %d; at most %d allowed: ask for fewer fields or smaller pages",
			c.fields, e.limits.MaxComplexity)
	}
	if n := complexity.Calculate(ctx, e.es, op.Operation, op.Variables); n > e.limits.MaxComplexity {
		return limitError(codeTooComplex, "the operation has complexity %d; at most %d allowed: ask for fewer fields or smaller pages",
			n, e.limits.MaxComplexity)
	}
	return nil
}

// InterceptOperation counts a websocket's open subscriptions.
func (e *limitsExtension) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	op := graphql.GetOperationContext(ctx)
	open := transport.OpenSubscriptions(ctx)
	if open == nil || op.Operation == nil || op.Operation.Operation != ast.Subscription {
		return next(ctx)
	}
	if n := open.Add(1); n > int64(e.limits.MaxSubscriptionsPerConnection) {
		open.Add(-1)
		err := limitError(codeTooManySubscriptions, "this connection has %d subscriptions open; at most %d allowed: complete one, or open another connection",
			n-1, e.limits.MaxSubscriptionsPerConnection)
		return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{err}})
	}
	context.AfterFunc(ctx, func() { open.Add(-1) })
	return next(ctx)
}

// cost is what a selection set adds up to, fragments expanded.
type cost struct {
	depth, aliases, fields int
}

func (c *cost) add(o cost, deeper int) {
	c.depth = max(c.depth, o.depth+deeper)
	c.aliases = satAdd(c.aliases, o.aliases)
	c.fields = satAdd(c.fields, o.fields)
}

func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

type introKey struct {
	fragment string
	depth    int
}

// opWalker walks an operation once, each fragment once (memoized), so that a document
// spreading fragments within fragments costs its size to check, not what it expands to.
type opWalker struct {
	doc           *ast.QueryDocument
	vars          map[string]any
	limits        Limits
	introspection bool
	memo          map[string]*cost // nil value: being walked (a cycle, which validation refuses)
	introMemo     map[introKey]bool
	err           *gqlerror.Error
}

func (w *opWalker) fail(err *gqlerror.Error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *opWalker) selectionSet(ss ast.SelectionSet) cost {
	var c cost
	for _, sel := range ss {
		switch s := sel.(type) {
		case *ast.Field:
			c.add(w.field(s), 0)
		case *ast.InlineFragment:
			c.add(w.selectionSet(s.SelectionSet), 0)
		case *ast.FragmentSpread:
			c.add(w.fragment(s.Name), 0)
		}
	}
	return c
}

func (w *opWalker) fragment(name string) cost {
	if c, ok := w.memo[name]; ok {
		if c == nil {
			return cost{}
		}
		return *c
	}
	def := w.doc.Fragments.ForName(name)
	if def == nil {
		return cost{}
	}
	w.memo[name] = nil
	c := w.selectionSet(def.SelectionSet)
	w.memo[name] = &c
	return c
}

func (w *opWalker) field(f *ast.Field) cost {
	c := cost{depth: 1, fields: 1}
	if f.Alias != "" && f.Alias != f.Name {
		c.aliases = 1
	}
	if f.Name == "__schema" || f.Name == "__type" {
		if !w.introspection {
			w.fail(limitError(codeIntrospectionDisabled, "introspection is disabled on this server"))
		} else if w.introspectionTooDeep(f.SelectionSet, 0) {
			w.fail(limitError(codeIntrospectionTooDeep, "introspection lists (fields, inputFields, interfaces, possibleTypes) nest %d deep or more; less is allowed",
				MaxIntrospectionDepth))
		}
		// Depth aside: the list rule bounds it. Its fields still count.
		inner := w.selectionSet(f.SelectionSet)
		c.fields = satAdd(c.fields, inner.fields)
		c.aliases = satAdd(c.aliases, inner.aliases)
		return c
	}
	w.checkPage(f)
	c.add(w.selectionSet(f.SelectionSet), 1)
	return c
}

// checkPage refuses a page larger than MaxPageSize, whether given literally or in a
// variable.
func (w *opWalker) checkPage(f *ast.Field) {
	if len(f.Arguments) == 0 || f.Definition == nil {
		return
	}
	args := f.ArgumentMap(w.vars)
	for _, name := range []string{"first", "last"} {
		if n, ok := intArg(args[name]); ok && n > int64(w.limits.MaxPageSize) {
			w.fail(limitError(codePageTooLarge, "%s: %d is more than the maximum page size %d", name, n, w.limits.MaxPageSize))
		}
	}
	if ids, ok := args["ids"].([]any); ok && len(ids) > w.limits.MaxPageSize {
		w.fail(limitError(codePageTooLarge, "ids: %d ids; at most %d allowed", len(ids), w.limits.MaxPageSize))
	}
}

func intArg(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case float64:
		return int64(n), true
	}
	return 0, false
}

// introspectionLists are the fields whose nesting MaxIntrospectionDepth bounds.
var introspectionLists = map[string]bool{"fields": true, "inputFields": true, "interfaces": true, "possibleTypes": true}

// introspectionTooDeep reports whether the lists of introspection types nest
// MaxIntrospectionDepth deep in ss, given depth lists above it.
func (w *opWalker) introspectionTooDeep(ss ast.SelectionSet, depth int) bool {
	for _, sel := range ss {
		switch s := sel.(type) {
		case *ast.Field:
			d := depth
			if introspectionLists[s.Name] {
				if d++; d >= MaxIntrospectionDepth {
					return true
				}
			}
			if w.introspectionTooDeep(s.SelectionSet, d) {
				return true
			}
		case *ast.InlineFragment:
			if w.introspectionTooDeep(s.SelectionSet, depth) {
				return true
			}
		case *ast.FragmentSpread:
			k := introKey{s.Name, depth}
			deep, seen := w.introMemo[k]
			if !seen {
				w.introMemo[k] = false // a cycle adds nothing
				if def := w.doc.Fragments.ForName(s.Name); def != nil {
					deep = w.introspectionTooDeep(def.SelectionSet, depth)
				}
				w.introMemo[k] = deep
			}
			if deep {
				return true
			}
		}
	}
	return false
}
