package graph

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	golru "github.com/hashicorp/golang-lru/v2"
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
	// plus its children, a connection's edges their children times its page size (first
	// or last, else the default page size), other lists their children times their size
	// (ids for nodes), and a selection on an interface or a union what it costs on its
	// costliest member (operationComplexity), so a page of pages is costed as what it
	// can return.
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
	DefaultMaxComplexity                 = 100000
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

// complexityFuncs weights the list fields of the schema, other than connections, by
// their size.
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
	// Connections (conversations, messages) are weighed by operationComplexity itself:
	// their edges by the page size, their pageInfo and totalCount once.
	c.Conversation.Branches = func(child int, first *int) int { return page(child, first, nil) }
	c.Query.Nodes = func(child int, ids []string) int { return weigh(child, len(ids)) }
	c.Query.ToolCallsAwaitingResult = func(child int, _ *string, _ []string, _ *bool, first *int) int {
		return page(child, first, nil)
	}
	// An export reads the whole history, a page of the largest size at a time.
	c.Conversation.Transcript = func(child int, _ parley.TranscriptFormat, _ *string, _ *int, _ *bool,
		_ *parley.ImageExport, _ *string, _ *int, _ *string, _ *parley.ForeignReasoning, _ *string) int {
		return weigh(child, l.MaxPageSize)
	}
	c.Conversation.TranscriptReport = func(child int, _ parley.TranscriptFormat, _ *string, _ *int, _ *bool,
		_ *parley.ImageExport, _ *string, _ *int, _ *string, _ *parley.ForeignReasoning, _ *string) int {
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
	// costs remembers the complexity of operations of the documents gqlgen's query cache
	// keeps, when no variable can change it (operationComplexity): costing a page of
	// every field walked its selection once per message type, 5% of a history read's
	// CPU (issue 15 §6).
	costs *golru.Cache[*ast.OperationDefinition, int]
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
	var err error
	e.costs, err = golru.New[*ast.OperationDefinition, int](1000) // as many as the query cache's documents
	return err
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
	n, ok := e.costs.Get(op.Operation)
	if !ok {
		var fixed bool
		if n, fixed = operationComplexity(ctx, e.es, op); fixed {
			e.costs.Add(op.Operation, n)
		}
	}
	if n > e.limits.MaxComplexity {
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

// operationComplexity is the operation's cost as Limits.MaxComplexity says, costed for
// the worst case an answer can be, and no worse:
//   - a selection on an interface or a union costs what it costs on its most expensive
//     member, not the sum over its members (gqlgen's complexity.Calculate adds up every
//     inline fragment, so a page selecting every field of the eight message variants
//     costed as if each message were all eight at once);
//   - a connection's edges cost their selection times the page size (first or last,
//     else the default page size), and its pageInfo and totalCount once, not once per
//     edge.
//
// So the documented largest page, 1,000 messages with every field, costs some 48,000.
// Each field otherwise costs 1 plus its children, and the other lists as complexityFuncs
// says. fixed reports that no variable went into the cost: no argument of a connection
// or of a field with a complexity function names one, so the operation costs the same
// whatever its variables.
func operationComplexity(ctx context.Context, es graphql.ExecutableSchema, op *graphql.OperationContext) (n int, fixed bool) {
	s := es.Schema()
	var root *ast.Definition
	switch op.Operation.Operation {
	case ast.Mutation:
		root = s.Mutation
	case ast.Subscription:
		root = s.Subscription
	default:
		root = s.Query
	}
	if root == nil {
		return 0, true
	}
	w := &complexityWalker{ctx: ctx, es: es, schema: s, vars: op.Variables, memo: map[spreadKey]int{}}
	n = w.objectSelection(op.Operation.SelectionSet, root, 0)
	return n, !w.varies
}

// spreadKey is a fragment spread costed on one object type (and, on a connection, one
// page size).
type spreadKey struct {
	fragment, object string
	page             int
}

// complexityWalker costs an operation for operationComplexity. A fragment is costed
// once per object type it is spread on (memo), so a document spreading fragments in
// fragments costs its size times the types involved to check, not what it expands to.
type complexityWalker struct {
	ctx    context.Context
	es     graphql.ExecutableSchema
	schema *ast.Schema
	vars   map[string]any
	memo   map[spreadKey]int
	varies bool // a variable went into the cost
}

// selection costs ss selected on typ: on an interface or a union, the most expensive of
// its object types.
func (w *complexityWalker) selection(ss ast.SelectionSet, typ *ast.Definition) int {
	if typ.Kind != ast.Interface && typ.Kind != ast.Union {
		return w.objectSelection(ss, typ, 0)
	}
	worst := 0
	for _, o := range w.schema.GetPossibleTypes(typ) {
		if o.Kind == ast.Object {
			worst = max(worst, w.objectSelection(ss, o, 0))
		}
	}
	return worst
}

// objectSelection costs ss on an object of type obj: its fields, and the fragments
// whose type condition obj satisfies. page is the page size when obj is a connection.
func (w *complexityWalker) objectSelection(ss ast.SelectionSet, obj *ast.Definition, page int) int {
	n := 0
	for _, sel := range ss {
		switch s := sel.(type) {
		case *ast.Field:
			n = satAdd(n, w.field(s, obj, page))
		case *ast.InlineFragment:
			if w.applies(s.TypeCondition, obj) {
				n = satAdd(n, w.objectSelection(s.SelectionSet, obj, page))
			}
		case *ast.FragmentSpread:
			if s.Definition == nil || !w.applies(s.Definition.TypeCondition, obj) {
				continue
			}
			k := spreadKey{s.Name, obj.Name, page}
			c, ok := w.memo[k]
			if !ok {
				w.memo[k] = 0 // a cycle adds nothing (validation refuses one anyway)
				c = w.objectSelection(s.Definition.SelectionSet, obj, page)
				w.memo[k] = c
			}
			n = satAdd(n, c)
		}
	}
	return n
}

// applies reports whether a fragment on cond applies to an object of type obj.
func (w *complexityWalker) applies(cond string, obj *ast.Definition) bool {
	if cond == "" || cond == obj.Name {
		return true
	}
	def := w.schema.Types[cond]
	return def != nil && containsType(w.schema.GetPossibleTypes(def), obj.Name)
}

func containsType(defs []*ast.Definition, name string) bool {
	for _, d := range defs {
		if d.Name == name {
			return true
		}
	}
	return false
}

// field costs f on an object of type obj (a connection of page elements when page is
// not 0): 1 plus its children, a connection's edges their children times page, or
// what complexityFuncs says. The introspection schema costs nothing here (its depth is
// bounded).
func (w *complexityWalker) field(f *ast.Field, obj *ast.Definition, page int) int {
	if f.Definition == nil {
		return 1
	}
	typ := w.schema.Types[f.Definition.Type.Name()]
	if typ == nil || typ.Name == "__Schema" {
		return 0
	}
	args := f.ArgumentMap(w.vars)
	variable := usesVariables(f.Arguments)
	child := 0
	switch {
	case typ.Kind == ast.Object && strings.HasSuffix(typ.Name, "Connection") && f.Definition.Arguments.ForName("first") != nil:
		w.varies = w.varies || variable
		n := parley.DefaultPageSize
		if v, ok := intArg(args["first"]); ok {
			n = int(v)
		} else if v, ok := intArg(args["last"]); ok {
			n = int(v)
		}
		child = w.objectSelection(f.SelectionSet, typ, max(n, 1))
	case typ.Kind == ast.Object || typ.Kind == ast.Interface || typ.Kind == ast.Union:
		child = w.selection(f.SelectionSet, typ)
	}
	if page > 0 && f.Name == "edges" {
		return weigh(child, page)
	}
	if c, ok := w.es.Complexity(w.ctx, obj.Name, f.Name, child, args); ok {
		w.varies = w.varies || variable
		if c >= 1 {
			return c
		}
	}
	return satAdd(1, child)
}

// usesVariables reports whether a variable appears in args.
func usesVariables(args ast.ArgumentList) bool {
	var uses func(v *ast.Value) bool
	uses = func(v *ast.Value) bool {
		if v == nil {
			return false
		}
		if v.Kind == ast.Variable {
			return true
		}
		for _, c := range v.Children {
			if uses(c.Value) {
				return true
			}
		}
		return false
	}
	for _, a := range args {
		if uses(a.Value) {
			return true
		}
	}
	return false
}
