package graph

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/model"
	"github.com/parley-dev/parley/graph/transport"
	"github.com/parley-dev/parley/internal/bufpool"
	"github.com/parley-dev/parley/internal/jsonscan"
	"github.com/parley-dev/parley/render"
)

// The history read's hot path.
//
// gqlgen executes every field of every message through its generic machinery: a field
// context, a context value, closures and an interface conversion per field, a goroutine
// per list element, a field set with a map per object. For a page of 100 messages with
// every field selected that is some 35,000 allocations and most of the read's time
// (bench/report.md has the profile). So writeMessagePages intercepts
// MessageConnection.edges: when every field its selection asks for is one this file
// knows, the page is written straight to JSON, field by field in the order and spelling
// gqlgen would write it. Anything else (a field added to the schema but not here, a
// directive, a value gqlgen would turn into an error, such as a null where the schema
// says non-null) leaves the page to gqlgen, whose answer is then the same as always.
// pagewriter_test.go checks that both write the same bytes, and that every field of
// the message types is known here.

// writeMessagePages returns a field middleware (handler.Server.AroundFields) that writes
// the html fields with renderer, as the resolvers do.
func writeMessagePages(renderer *render.Renderer) graphql.FieldMiddleware {
	compiled, err := lru.New[*ast.OperationDefinition, *compiledOperation](compiledOperations)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return func(ctx context.Context, next graphql.Resolver) (any, error) {
		fc := graphql.GetFieldContext(ctx)
		if fc == nil || fc.Object != "MessageConnection" || fc.Field.Field == nil || fc.Field.Name != "edges" {
			return next(ctx)
		}
		res, err := next(ctx)
		if err != nil {
			return res, err
		}
		edges, ok := res.([]*model.MessageEdge)
		if !ok {
			return res, err
		}
		write, ok := compileEdgeOnce(compiled, graphql.GetOperationContext(ctx), fc.Field)
		if ok {
			if out, ok := writeEdges(write, edges, renderer, transport.FinalOf(ctx)); ok {
				pagesWritten.Add(1)
				return out, nil
			}
		}
		leftToGqlgen.Add(1)
		return res, nil
	}
}

// pagesWritten and leftToGqlgen count the pages written here and those left to gqlgen;
// selectionsCompiled counts the edges selections compiled (compileEdgeOnce).
var pagesWritten, leftToGqlgen, selectionsCompiled atomic.Int64

// compiledOperations is how many operations' compiled selections are kept: as many as
// the query cache keeps documents (handler.go), whose operations are the keys.
const compiledOperations = 1000

// compiledOperation holds the compiled edges selections of one operation of a cached
// document, by the selections themselves (selectionKey). plain: the operation has no directive anywhere, so what
// CollectFields makes of its selections does not depend on the variables (only @skip and
// @include read them here, and a directive anywhere can decide which fields of one
// response key are merged), and each selection is compiled once for every request.
type compiledOperation struct {
	plain bool
	mu    sync.Mutex
	edges map[selectionKey]compiledEdge
}

// selectionKey identifies an edges field's selections by their nodes in the document.
// Not the field alone: CollectFields merges the selections of the fields of one response
// key, so a field in a fragment spread in two places can have different selections in
// each.
type selectionKey [4]ast.Selection

// keyOf returns sel's key, and false when sel has too many selections for one.
func keyOf(sel ast.SelectionSet) (selectionKey, bool) {
	var k selectionKey
	if len(sel) > len(k) {
		return k, false
	}
	copy(k[:], sel)
	return k, true
}

type compiledEdge struct {
	write writeFunc[*model.MessageEdge]
	ok    bool
}

// compileEdgeOnce compiles f's selection (compileEdge), once for each operation of a
// document gqlgen's query cache keeps when the operation has no directives: compiling a
// page's selection for every read was 5-10% of a history read's CPU (issue 15 §6).
func compileEdgeOnce(cache *lru.Cache[*ast.OperationDefinition, *compiledOperation], oc *graphql.OperationContext, f graphql.CollectedField) (writeFunc[*model.MessageEdge], bool) {
	if oc == nil || oc.Operation == nil {
		return nil, false
	}
	op, ok := cache.Get(oc.Operation)
	if !ok {
		op = &compiledOperation{plain: !hasDirectives(oc.Doc, oc.Operation.SelectionSet, map[string]bool{})}
		cache.Add(oc.Operation, op)
	}
	key, fits := keyOf(f.Selections)
	if !op.plain || !fits {
		selectionsCompiled.Add(1)
		return compileEdge(oc, f.Selections)
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	c, ok := op.edges[key]
	if !ok {
		selectionsCompiled.Add(1)
		c.write, c.ok = compileEdge(oc, f.Selections)
		if op.edges == nil {
			op.edges = map[selectionKey]compiledEdge{}
		}
		op.edges[key] = c
	}
	return c.write, c.ok
}

// hasDirectives reports whether sel, or a fragment it spreads, carries a directive.
func hasDirectives(doc *ast.QueryDocument, sel ast.SelectionSet, seen map[string]bool) bool {
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if len(s.Directives) > 0 || hasDirectives(doc, s.SelectionSet, seen) {
				return true
			}
		case *ast.InlineFragment:
			if len(s.Directives) > 0 || hasDirectives(doc, s.SelectionSet, seen) {
				return true
			}
		case *ast.FragmentSpread:
			if len(s.Directives) > 0 {
				return true
			}
			if seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			def := doc.Fragments.ForName(s.Name)
			if def == nil || len(def.Directives) > 0 || hasDirectives(doc, def.SelectionSet, seen) {
				return true // nil: not for this file to judge; compiled per request
			}
		default:
			return true
		}
	}
	return false
}

// writeEdges writes edges with a compiled [MessageEdge!]! selection, or reports false
// when it cannot write them exactly as gqlgen would. With final (a response over HTTP,
// transport.FinalOf), the page is written in the final form of the response's data,
// which the transport then copies as it is: the same bytes in the end.
func writeEdges(write writeFunc[*model.MessageEdge], edges []*model.MessageEdge, renderer *render.Renderer, final *transport.Final) (graphql.Marshaler, bool) {
	w := &jsonWriter{b: bufpool.Get(), html: renderer, final: final != nil}
	w.b = append(w.b, '[')
	for i, e := range edges {
		if e == nil {
			bufpool.Put(w.b)
			return nil, false
		}
		if i > 0 {
			w.b = append(w.b, ',')
		}
		if !write(w, e) {
			bufpool.Put(w.b)
			return nil, false
		}
	}
	w.b = append(w.b, ']')
	// gqlgen copies the page into its response once, when it writes the response; the
	// buffer then goes back to the pool, through final when the page is in its final
	// form. (A page gqlgen never writes, its parent nulled by another field's error,
	// leaves its buffer to the garbage collector.)
	return graphql.WriterFunc(func(out io.Writer) {
		if w.b == nil {
			panic("graph: a message page was written twice")
		}
		if w.final {
			final.Place(out, w.b)
		} else {
			out.Write(w.b)
			bufpool.Put(w.b)
		}
		w.b = nil
	}), true
}

// jsonWriter appends JSON to b. It is an io.Writer, for the domain's MarshalGQL methods.
// html renders the html fields: the page's one dependency, carried with the buffer so
// that the field writers stay plain functions.
//
// final: what is written is in the final form of a response's data over HTTP
// (transport.AppendFinal): strings are escaped as gqlgen escapes them and then as the
// transport does, JSON values compacted. A value that cannot be (a JSON value ending
// inside a string) is written as gqlgen writes it, and final turns false: the transport
// then scans the page as it scans the rest.
type jsonWriter struct {
	b     []byte
	html  *render.Renderer
	final bool
	// siblings holds the message's siblings while they are written: one for the page
	// where a new one a message cost an allocation.
	siblings model.Siblings
}

func (w *jsonWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (w *jsonWriter) WriteString(s string) (int, error) {
	w.b = append(w.b, s...)
	return len(s), nil
}

const hexDigits = "0123456789ABCDEF"

// str writes s as gqlgen's MarshalString does (graphql.writeQuotedString): control
// characters, backslash and quote escaped, every other byte (multi-byte runes and
// invalid UTF-8 too) as it is. Bytes of multi-byte runes are never ASCII, so looking at
// bytes finds what its loop over runes finds.
func (w *jsonWriter) str(s string) {
	if w.final {
		w.finalStr(s)
		return
	}
	w.b = append(w.b, '"')
	start := 0
	for i := jsonscan.Escaped(s, 0); i < len(s); i = jsonscan.Escaped(s, i+1) {
		w.b = append(w.b, s[start:i]...)
		w.escape(s[i])
		start = i + 1
	}
	w.b = append(w.b, s[start:]...)
	w.b = append(w.b, '"')
}

// escape writes c, a control character, backslash or quote, escaped as gqlgen escapes it.
func (w *jsonWriter) escape(c byte) {
	switch c {
	case '\t':
		w.b = append(w.b, `\t`...)
	case '\r':
		w.b = append(w.b, `\r`...)
	case '\n':
		w.b = append(w.b, `\n`...)
	case '\\':
		w.b = append(w.b, `\\`...)
	case '"':
		w.b = append(w.b, `\"`...)
	default:
		w.b = append(w.b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
	}
}

// finalStr writes s as str does and then transport.AppendFinal would: <, > and & as
// \u003c, \u003e and \u0026, U+2028 and U+2029 as \u2028 and \u2029.
func (w *jsonWriter) finalStr(s string) {
	w.b = append(w.b, '"')
	start := 0
	for i := jsonscan.InString(s, 0, &finalSpecial); i < len(s); i = jsonscan.InString(s, i, &finalSpecial) {
		esc, n := transport.HTMLEscape(s, i)
		switch {
		case n > 0:
			w.b = append(w.b, s[start:i]...)
			w.b = append(w.b, esc...)
			start = i + n
		case s[i] < 0x20 || s[i] == '"' || s[i] == '\\':
			w.b = append(w.b, s[start:i]...)
			w.escape(s[i])
			start = i + 1
		}
		i += max(n, 1)
	}
	w.b = append(w.b, s[start:]...)
	w.b = append(w.b, '"')
}

// finalSpecial marks the bytes finalStr looks at.
var finalSpecial [256]bool

func init() {
	for c := range 0x20 {
		finalSpecial[c] = true
	}
	for _, c := range []byte{'"', '\\', '<', '>', '&', 0xE2} {
		finalSpecial[c] = true
	}
}

// upper writes strings.ToUpper(s) as str does: the API's spelling of the enums stored
// in lower case (Role.String, MessageStatus.String), without a new string for each
// (1.2% of a read's CPU). Anything but printable ASCII without quotes and backslashes
// goes through strings.ToUpper and str.
func (w *jsonWriter) upper(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || c < 0x20 || c == '"' || c == '\\' {
			w.str(strings.ToUpper(s))
			return
		}
	}
	w.b = append(w.b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		w.b = append(w.b, c)
	}
	w.b = append(w.b, '"')
}

func (w *jsonWriter) null() { w.b = append(w.b, "null"...) }

func (w *jsonWriter) int(i int) { w.b = strconv.AppendInt(w.b, int64(i), 10) }

func (w *jsonWriter) optInt(p *int) {
	if p == nil {
		w.null()
		return
	}
	w.int(*p)
}

func (w *jsonWriter) bool(v bool) { w.b = strconv.AppendBool(w.b, v) }

// time writes t as graphql.MarshalTime does (strconv.Quote of RFC 3339 with
// nanoseconds, which needs no escaping), and reports false for the zero time, which
// gqlgen turns into null: an error where the schema says non-null.
func (w *jsonWriter) time(t time.Time) bool {
	if t.IsZero() {
		return false
	}
	w.b = append(w.b, '"')
	w.b = t.AppendFormat(w.b, time.RFC3339Nano)
	w.b = append(w.b, '"')
	return true
}

// optTime writes a nullable time: nil and the zero time are null.
func (w *jsonWriter) optTime(t *time.Time) {
	if t == nil || !w.time(*t) {
		w.null()
	}
}

// optFloat writes a nullable Float as graphql.MarshalFloatContext does (%g), and
// reports false for infinities and NaN, which it refuses with an error.
func (w *jsonWriter) optFloat(p *float64) bool {
	if p == nil {
		w.null()
		return true
	}
	if math.IsInf(*p, 0) || math.IsNaN(*p) {
		return false
	}
	w.b = fmt.Appendf(w.b, "%g", *p)
	return true
}

// json writes a JSON! value: nil is an error to gqlgen, anything else its MarshalGQL.
func (w *jsonWriter) json(j parley.JSON) bool {
	if j == nil {
		return false
	}
	w.jsonValue(j)
	return true
}

// optJSON writes a nullable JSON value.
func (w *jsonWriter) optJSON(j parley.JSON) {
	if j == nil {
		w.null()
		return
	}
	w.jsonValue(j)
}

// jsonValue writes j as its MarshalGQL does, in its final form when the writer is final.
func (w *jsonWriter) jsonValue(j parley.JSON) {
	if w.final && len(j) > 0 {
		if b, ok := transport.AppendFinal(w.b, j); ok {
			w.b = b
			return
		}
		w.final = false
	}
	j.MarshalGQL(w)
}

// A compiled selection: write writes v's selected fields as a JSON object, or reports
// false when gqlgen would write something else (an error, a null).
type writeFunc[T any] func(w *jsonWriter, v T) bool

// fieldCompiler compiles one selected field of a T: scalars ignore f's selections,
// objects compile them.
type fieldCompiler[T any] func(oc *graphql.OperationContext, f graphql.CollectedField) (writeFunc[T], bool)

// objectType is a GraphQL object type this file can write.
type objectType[T any] struct {
	name         string
	implementors []string // gqlgen's: the type and the interfaces and unions it is in
	fields       map[string]fieldCompiler[T]
}

// compile compiles sel for the type, as gqlgen collects it (fragments, @skip and
// @include resolved, fields of one response key merged), and reports false when a
// field is unknown or carries a directive it would have to run.
func (t *objectType[T]) compile(oc *graphql.OperationContext, sel ast.SelectionSet) (writeFunc[T], bool) {
	collected := graphql.CollectFields(oc, sel, t.implementors)
	type member struct {
		key   []byte // "alias":
		write writeFunc[T]
	}
	members := make([]member, 0, len(collected))
	for _, f := range collected {
		if f.IsDeferred() || !onlySkipInclude(f.Directives) {
			return nil, false
		}
		kw := jsonWriter{}
		kw.str(f.Alias)
		kw.b = append(kw.b, ':')
		if f.Name == "__typename" {
			name := t.name
			members = append(members, member{kw.b, func(w *jsonWriter, _ T) bool { w.str(name); return true }})
			continue
		}
		c, ok := t.fields[f.Name]
		if !ok {
			return nil, false
		}
		write, ok := c(oc, f)
		if !ok {
			return nil, false
		}
		members = append(members, member{kw.b, write})
	}
	return func(w *jsonWriter, v T) bool {
		w.b = append(w.b, '{')
		for i, m := range members {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, m.key...)
			if !m.write(w, v) {
				return false
			}
		}
		w.b = append(w.b, '}')
		return true
	}, true
}

func onlySkipInclude(ds ast.DirectiveList) bool {
	for _, d := range ds {
		if d.Name != "skip" && d.Name != "include" {
			return false
		}
	}
	return true
}

// scalar is a field written without a selection.
func scalar[T any](write writeFunc[T]) fieldCompiler[T] {
	return func(*graphql.OperationContext, graphql.CollectedField) (writeFunc[T], bool) { return write, true }
}

// str, id, ... are the scalar fields of each kind, from a getter.
func str[T any](get func(T) string) fieldCompiler[T] {
	return scalar(func(w *jsonWriter, v T) bool { w.str(get(v)); return true })
}

func integer[T any](get func(T) int) fieldCompiler[T] {
	return scalar(func(w *jsonWriter, v T) bool { w.int(get(v)); return true })
}

func integer64[T any](get func(T) int64) fieldCompiler[T] {
	return scalar(func(w *jsonWriter, v T) bool { w.b = strconv.AppendInt(w.b, get(v), 10); return true })
}

// optStr is a nullable string field bound to a *string.
func optStr[T any](get func(T) *string) fieldCompiler[T] {
	return scalar(func(w *jsonWriter, v T) bool {
		if s := get(v); s != nil {
			w.str(*s)
		} else {
			w.null()
		}
		return true
	})
}

func optInteger[T any](get func(T) *int) fieldCompiler[T] {
	return scalar(func(w *jsonWriter, v T) bool { w.optInt(get(v)); return true })
}

func boolean[T any](get func(T) bool) fieldCompiler[T] {
	return scalar(func(w *jsonWriter, v T) bool { w.bool(get(v)); return true })
}

func timestamp[T any](get func(T) time.Time) fieldCompiler[T] {
	return scalar(func(w *jsonWriter, v T) bool { return w.time(get(v)) })
}

// enum writes a non-null enum whose Go value is its API spelling, as gqlgen's
// enum_values binding does (a string).
func enum[T any, E ~string](get func(T) E) fieldCompiler[T] {
	return scalar(func(w *jsonWriter, v T) bool { w.str(string(get(v))); return true })
}

// object is a non-null object field.
func object[T, C any](t *objectType[C], get func(T) C) fieldCompiler[T] {
	return func(oc *graphql.OperationContext, f graphql.CollectedField) (writeFunc[T], bool) {
		write, ok := t.compile(oc, f.Selections)
		if !ok {
			return nil, false
		}
		return func(w *jsonWriter, v T) bool { return write(w, get(v)) }, true
	}
}

// optObject is a nullable object field: nil is null.
func optObject[T any, C any](t *objectType[*C], get func(T) *C) fieldCompiler[T] {
	return func(oc *graphql.OperationContext, f graphql.CollectedField) (writeFunc[T], bool) {
		write, ok := t.compile(oc, f.Selections)
		if !ok {
			return nil, false
		}
		return func(w *jsonWriter, v T) bool {
			c := get(v)
			if c == nil {
				w.null()
				return true
			}
			return write(w, c)
		}, true
	}
}

// list is a [C!]! field of objects, elements passed by address as gqlgen does.
func list[T any, C any](t *objectType[*C], get func(T) []C) fieldCompiler[T] {
	return func(oc *graphql.OperationContext, f graphql.CollectedField) (writeFunc[T], bool) {
		write, ok := t.compile(oc, f.Selections)
		if !ok {
			return nil, false
		}
		return func(w *jsonWriter, v T) bool {
			items := get(v)
			w.b = append(w.b, '[')
			for i := range items {
				if i > 0 {
					w.b = append(w.b, ',')
				}
				if !write(w, &items[i]) {
					return false
				}
			}
			w.b = append(w.b, ']')
			return true
		}, true
	}
}

// compileEdge compiles a MessageEdge selection. Its node is a union: each variant's
// selection is compiled with it, so that the result holds no operation context and may
// be shared by the requests of one operation (compileEdgeOnce).
func compileEdge(oc *graphql.OperationContext, sel ast.SelectionSet) (writeFunc[*model.MessageEdge], bool) {
	edge := &objectType[*model.MessageEdge]{name: "MessageEdge", implementors: messageEdgeImplementors,
		fields: map[string]fieldCompiler[*model.MessageEdge]{
			"cursor": str(func(e *model.MessageEdge) string { return e.Cursor }),
			"node": func(oc *graphql.OperationContext, f graphql.CollectedField) (writeFunc[*model.MessageEdge], bool) {
				n := compileNode(oc, f.Selections)
				return func(w *jsonWriter, e *model.MessageEdge) bool { return n.write(w, e.Node) }, true
			},
		}}
	return edge.compile(oc, sel)
}

// nodeWriter writes the Message union, each variant with its compiled selection (nil:
// cannot be written here).
type nodeWriter struct {
	text     writeFunc[*parley.TextMessage]
	image    writeFunc[*parley.ImageMessage]
	file     writeFunc[*parley.FileReferenceMessage]
	request  writeFunc[*parley.ToolRequestMessage]
	result   writeFunc[*parley.ToolResultMessage]
	control  writeFunc[*parley.SystemControlMessage]
	resource writeFunc[*parley.MCPResourceMessage]
	compact  writeFunc[*parley.CompactionMessage]
	unknown  writeFunc[*parley.UnknownMessage]
}

func compileNode(oc *graphql.OperationContext, sel ast.SelectionSet) *nodeWriter {
	n := &nodeWriter{}
	n.text, _ = textMessageType.compile(oc, sel)
	n.image, _ = imageMessageType.compile(oc, sel)
	n.file, _ = fileReferenceMessageType.compile(oc, sel)
	n.request, _ = toolRequestMessageType.compile(oc, sel)
	n.result, _ = toolResultMessageType.compile(oc, sel)
	n.control, _ = systemControlMessageType.compile(oc, sel)
	n.resource, _ = mcpResourceMessageType.compile(oc, sel)
	n.compact, _ = compactionMessageType.compile(oc, sel)
	n.unknown, _ = unknownMessageType.compile(oc, sel)
	return n
}

func writeVariant[T any](write writeFunc[T], w *jsonWriter, m T) bool {
	return write != nil && write(w, m)
}

func (n *nodeWriter) write(w *jsonWriter, m parley.Message) bool {
	switch m := m.(type) {
	case *parley.TextMessage:
		return m != nil && writeVariant(n.text, w, m)
	case *parley.ImageMessage:
		return m != nil && writeVariant(n.image, w, m)
	case *parley.FileReferenceMessage:
		return m != nil && writeVariant(n.file, w, m)
	case *parley.ToolRequestMessage:
		return m != nil && writeVariant(n.request, w, m)
	case *parley.ToolResultMessage:
		return m != nil && writeVariant(n.result, w, m)
	case *parley.SystemControlMessage:
		return m != nil && writeVariant(n.control, w, m)
	case *parley.MCPResourceMessage:
		return m != nil && writeVariant(n.resource, w, m)
	case *parley.CompactionMessage:
		return m != nil && writeVariant(n.compact, w, m)
	case *parley.UnknownMessage:
		return m != nil && writeVariant(n.unknown, w, m)
	}
	return false // nil, or a type gqlgen would have to deal with
}

// The message types' fields, as gqlgen.yml binds them (generated.go's _Type_field
// functions say what each returns and how it is marshalled).

// messageFields are the fields of MessageBase (and Node) every variant has.
func messageFields[T parley.Message](more map[string]fieldCompiler[T]) map[string]fieldCompiler[T] {
	fs := map[string]fieldCompiler[T]{
		"id":              str(func(m T) string { return m.Meta().ID }),
		"conversationId":  str(func(m T) string { return m.Meta().ConversationID }),
		"role":            scalar(func(w *jsonWriter, m T) bool { w.upper(string(m.Meta().Role)); return true }), // Role.String
		"position":        integer(func(m T) int { return m.Meta().Position }),
		"createdAt":       timestamp(func(m T) time.Time { return m.Meta().CreatedAt }),
		"updatedAt":       timestamp(func(m T) time.Time { return m.Meta().UpdatedAt }),
		"label":           str(func(m T) string { return m.Label() }),
		"sourceId":        optStr(func(m T) *string { return m.Meta().OptSourceID() }),
		"messageStatus":   scalar(func(w *jsonWriter, m T) bool { w.upper(string(m.Meta().MessageStatus())); return true }), // MessageStatus.String
		"statusReason":    optStr(func(m T) *string { return m.Meta().StatusReason() }),
		"clientMessageId": optStr(func(m T) *string { return m.Meta().ClientMessageID() }),
		"provenance":      optObject(provenanceType, func(m T) *parley.Provenance { return m.Meta().Provenance() }),
		"hidden":          boolean(func(m T) bool { return m.Meta().Hidden }),
		"deletedAt":       scalar(func(w *jsonWriter, m T) bool { w.optTime(m.Meta().DeletedAt); return true }),
		// The tree, when it was read with the page; otherwise the page is gqlgen's,
		// whose resolvers read it.
		"parentId": scalar(func(w *jsonWriter, m T) bool {
			t := m.Meta().Tree
			if t == nil {
				return false
			}
			if t.ParentID == "" {
				w.null()
			} else {
				w.str(t.ParentID)
			}
			return true
		}),
		"siblings": func(oc *graphql.OperationContext, f graphql.CollectedField) (writeFunc[T], bool) {
			write, ok := siblingsType.compile(oc, f.Selections)
			if !ok {
				return nil, false
			}
			return func(w *jsonWriter, m T) bool {
				t := m.Meta().Tree
				if t == nil {
					return false
				}
				w.siblings = siblingsOf(m, t)
				return write(w, &w.siblings)
			}, true
		},
	}
	for k, v := range more {
		fs[k] = v
	}
	return fs
}

// textFields are TextBearing's fields.
func textFields[T interface {
	parley.Message
	parley.TextBearing
}](more map[string]fieldCompiler[T]) map[string]fieldCompiler[T] {
	fs := map[string]fieldCompiler[T]{
		"content": str(func(m T) string { return m.Content() }),
		"text":    str(func(m T) string { return m.Text() }),
		"html":    scalar(func(w *jsonWriter, m T) bool { w.str(w.html.HTML(m.Text())); return true }),
	}
	for k, v := range more {
		fs[k] = v
	}
	return messageFields(fs)
}

// bodyFields are the fields of the variants with a Body: parts and thinking.
func bodyFields[T interface {
	parley.Message
	parley.TextBearing
	Thinking() string
}](body func(T) *parley.Body, more map[string]fieldCompiler[T]) map[string]fieldCompiler[T] {
	fs := map[string]fieldCompiler[T]{
		"parts":    list(partType, func(m T) []parley.Part { return body(m).Parts }),
		"thinking": str(func(m T) string { return m.Thinking() }),
	}
	for k, v := range more {
		fs[k] = v
	}
	return textFields(fs)
}

var (
	textMessageType = &objectType[*parley.TextMessage]{name: "TextMessage", implementors: textMessageImplementors,
		fields: bodyFields(func(m *parley.TextMessage) *parley.Body { return &m.Body }, nil)}

	imageMessageType = &objectType[*parley.ImageMessage]{name: "ImageMessage", implementors: imageMessageImplementors,
		fields: messageFields(map[string]fieldCompiler[*parley.ImageMessage]{
			"source":          object(imageSourceType, func(m *parley.ImageMessage) *parley.ImageSource { return &m.Source }),
			"recognitionMode": enum(func(m *parley.ImageMessage) parley.RecognitionMode { return m.RecognitionMode }),
			"recognition":     optObject(imageRecognitionType, func(m *parley.ImageMessage) *parley.ImageRecognition { return m.Recognition }),
		})}

	fileReferenceMessageType = &objectType[*parley.FileReferenceMessage]{name: "FileReferenceMessage", implementors: fileReferenceMessageImplementors,
		fields: messageFields(map[string]fieldCompiler[*parley.FileReferenceMessage]{
			"path":       str(func(m *parley.FileReferenceMessage) string { return m.Path }),
			"startLine":  optInteger(func(m *parley.FileReferenceMessage) *int { return m.StartLine }),
			"endLine":    optInteger(func(m *parley.FileReferenceMessage) *int { return m.EndLine }),
			"resolution": optObject(fileResolutionType, func(m *parley.FileReferenceMessage) *parley.FileResolution { return m.Resolution }),
		})}

	toolRequestMessageType = &objectType[*parley.ToolRequestMessage]{name: "ToolRequestMessage", implementors: toolRequestMessageImplementors,
		fields: bodyFields(func(m *parley.ToolRequestMessage) *parley.Body { return &m.Body }, map[string]fieldCompiler[*parley.ToolRequestMessage]{
			"toolCalls": list(toolCallType, func(m *parley.ToolRequestMessage) []model.ToolCall {
				out := make([]model.ToolCall, len(m.ToolCalls))
				for i := range m.ToolCalls {
					out[i] = model.ToolCall{Call: &m.ToolCalls[i], MessageID: m.ID}
				}
				return out
			}),
		})}

	toolResultMessageType = &objectType[*parley.ToolResultMessage]{name: "ToolResultMessage", implementors: toolResultMessageImplementors,
		fields: bodyFields(func(m *parley.ToolResultMessage) *parley.Body { return &m.Body }, map[string]fieldCompiler[*parley.ToolResultMessage]{
			"toolCallId":   str(func(m *parley.ToolResultMessage) string { return m.ToolCallID }),
			"toolName":     str(func(m *parley.ToolResultMessage) string { return m.ToolName }),
			"status":       enum(func(m *parley.ToolResultMessage) parley.ToolResultStatus { return m.Status }),
			"output":       scalar(func(w *jsonWriter, m *parley.ToolResultMessage) bool { w.optJSON(m.Output); return true }),
			"outputRaw":    optStr(func(m *parley.ToolResultMessage) *string { return m.OutputRaw }),
			"error":        optObject(toolErrorType, func(m *parley.ToolResultMessage) *parley.ToolErrorDetail { return m.Error }),
			"durationMs":   optInteger(func(m *parley.ToolResultMessage) *int { return m.DurationMs }),
			"executedAt":   scalar(func(w *jsonWriter, m *parley.ToolResultMessage) bool { w.optTime(m.ExecutedAt); return true }),
			"truncated":    boolean(func(m *parley.ToolResultMessage) bool { return m.Truncated }),
			"originalSize": optInteger(func(m *parley.ToolResultMessage) *int { return m.OriginalSize }),
		})}

	systemControlMessageType = &objectType[*parley.SystemControlMessage]{name: "SystemControlMessage", implementors: systemControlMessageImplementors,
		fields: messageFields(map[string]fieldCompiler[*parley.SystemControlMessage]{
			"kind":   enum(func(m *parley.SystemControlMessage) parley.ControlKind { return m.ControlKind }),
			"from":   optStr(func(m *parley.SystemControlMessage) *string { return m.OptFrom() }),
			"to":     optStr(func(m *parley.SystemControlMessage) *string { return m.OptTo() }),
			"params": scalar(func(w *jsonWriter, m *parley.SystemControlMessage) bool { w.optJSON(m.Params); return true }),
		})}

	mcpResourceMessageType = &objectType[*parley.MCPResourceMessage]{name: "MCPResourceMessage", implementors: mCPResourceMessageImplementors,
		fields: textFields(map[string]fieldCompiler[*parley.MCPResourceMessage]{
			"serverName":  str(func(m *parley.MCPResourceMessage) string { return m.ServerName }),
			"resourceUri": str(func(m *parley.MCPResourceMessage) string { return m.ResourceURI }),
			"mimeType":    optStr(func(m *parley.MCPResourceMessage) *string { return m.OptMimeType() }),
			"retrievedAt": timestamp(func(m *parley.MCPResourceMessage) time.Time { return m.RetrievedAt }),
			"truncated":   boolean(func(m *parley.MCPResourceMessage) bool { return m.Truncated }),
		})}

	compactionMessageType = &objectType[*parley.CompactionMessage]{name: "CompactionMessage", implementors: compactionMessageImplementors,
		fields: textFields(map[string]fieldCompiler[*parley.CompactionMessage]{
			"provider":      optStr(func(m *parley.CompactionMessage) *string { return m.ProviderName() }),
			"providerData":  scalar(func(w *jsonWriter, m *parley.CompactionMessage) bool { w.optJSON(m.ProviderData()); return true }),
			"coversThrough": integer(func(m *parley.CompactionMessage) int { return m.Covers() }),
		})}

	unknownMessageType = &objectType[*parley.UnknownMessage]{name: "UnknownMessage", implementors: unknownMessageImplementors,
		fields: messageFields(map[string]fieldCompiler[*parley.UnknownMessage]{
			"type": str(func(m *parley.UnknownMessage) string { return m.TypeTag }),
			"raw":  scalar(func(w *jsonWriter, m *parley.UnknownMessage) bool { return w.json(m.Raw) }),
		})}

	provenanceType = &objectType[*parley.Provenance]{name: "Provenance", implementors: provenanceImplementors,
		fields: map[string]fieldCompiler[*parley.Provenance]{
			"provider":           str(func(p *parley.Provenance) string { return p.Provider }),
			"model":              str(func(p *parley.Provenance) string { return p.Model }),
			"responseId":         str(func(p *parley.Provenance) string { return p.ResponseID }),
			"finishReason":       str(func(p *parley.Provenance) string { return p.FinishReason }),
			"usage":              object(usageType, func(p *parley.Provenance) *parley.Usage { return &p.Usage }),
			"timeToFirstTokenMs": integer64(func(p *parley.Provenance) int64 { return p.TimeToFirstTokenMs }),
			"durationMs":         integer64(func(p *parley.Provenance) int64 { return p.DurationMs }),
		}}

	siblingsType = &objectType[*model.Siblings]{name: "Siblings", implementors: siblingsImplementors,
		fields: map[string]fieldCompiler[*model.Siblings]{
			"count": integer(func(s *model.Siblings) int { return s.Count }),
			"index": integer(func(s *model.Siblings) int { return s.Index }),
			"ids": scalar(func(w *jsonWriter, s *model.Siblings) bool {
				w.b = append(w.b, '[')
				for i, id := range s.Ids {
					if i > 0 {
						w.b = append(w.b, ',')
					}
					w.str(id)
				}
				w.b = append(w.b, ']')
				return true
			}),
		}}

	usageType = &objectType[*parley.Usage]{name: "Usage", implementors: usageImplementors,
		fields: map[string]fieldCompiler[*parley.Usage]{
			"inputTokens":              integer64(func(u *parley.Usage) int64 { return u.InputTokens }),
			"outputTokens":             integer64(func(u *parley.Usage) int64 { return u.OutputTokens }),
			"cachedInputTokens":        integer64(func(u *parley.Usage) int64 { return u.CachedInputTokens }),
			"cacheCreationInputTokens": integer64(func(u *parley.Usage) int64 { return u.CacheCreationInputTokens }),
			"reasoningTokens":          integer64(func(u *parley.Usage) int64 { return u.ReasoningTokens }),
		}}

	partType = &objectType[*parley.Part]{name: "Part", implementors: partImplementors,
		fields: map[string]fieldCompiler[*parley.Part]{
			"kind":      enum(func(p *parley.Part) parley.PartKind { return p.Kind }),
			"content":   str(func(p *parley.Part) string { return p.Content() }),
			"text":      str(func(p *parley.Part) string { return p.Text }),
			"html":      scalar(func(w *jsonWriter, p *parley.Part) bool { w.str(w.html.HTML(p.Text)); return true }),
			"signature": optStr(func(p *parley.Part) *string { return p.OptSignature() }),
			"itemId":    optStr(func(p *parley.Part) *string { return p.OptItemID() }),
			"raw":       scalar(func(w *jsonWriter, p *parley.Part) bool { w.optJSON(p.Raw); return true }),
			"citations": scalar(func(w *jsonWriter, p *parley.Part) bool { w.optJSON(p.Citations); return true }),
		}}

	imageSourceType = &objectType[*parley.ImageSource]{name: "ImageSource", implementors: imageSourceImplementors,
		fields: map[string]fieldCompiler[*parley.ImageSource]{
			"kind":      enum(func(s *parley.ImageSource) parley.ImageSourceKind { return s.Kind }),
			"url":       optStr(func(s *parley.ImageSource) *string { return s.OptURL() }),
			"base64":    optStr(func(s *parley.ImageSource) *string { return s.OptData() }),
			"mediaType": optStr(func(s *parley.ImageSource) *string { return s.OptMediaType() }),
			"filePath":  optStr(func(s *parley.ImageSource) *string { return s.OptFilePath() }),
		}}

	imageRecognitionType = &objectType[*parley.ImageRecognition]{name: "ImageRecognition", implementors: imageRecognitionImplementors,
		fields: map[string]fieldCompiler[*parley.ImageRecognition]{
			"status": enum(func(r *parley.ImageRecognition) parley.ProcessingStatus { return r.Status }),
			"modeUsed": scalar(func(w *jsonWriter, r *parley.ImageRecognition) bool {
				if r.ModeUsed == nil {
					w.null()
				} else {
					w.str(string(*r.ModeUsed))
				}
				return true
			}),
			"recognizedText": optStr(func(r *parley.ImageRecognition) *string { return r.OptRecognizedText() }),
			"visionAnalysis": optStr(func(r *parley.ImageRecognition) *string { return r.OptVisionAnalysis() }),
			"confidence":     scalar(func(w *jsonWriter, r *parley.ImageRecognition) bool { return w.optFloat(r.Confidence) }),
			"language":       optStr(func(r *parley.ImageRecognition) *string { return r.OptLanguage() }),
			"script":         optStr(func(r *parley.ImageRecognition) *string { return r.OptScript() }),
			"notice":         optStr(func(r *parley.ImageRecognition) *string { return r.OptNotice() }),
			"error":          optObject(processingErrorType, func(r *parley.ImageRecognition) *parley.ProcessingError { return r.Error }),
			"processedAt":    timestamp(func(r *parley.ImageRecognition) time.Time { return r.ProcessedAt }),
		}}

	processingErrorType = &objectType[*parley.ProcessingError]{name: "ProcessingError", implementors: processingErrorImplementors,
		fields: map[string]fieldCompiler[*parley.ProcessingError]{
			"message":   str(func(e *parley.ProcessingError) string { return e.Message }),
			"retryable": boolean(func(e *parley.ProcessingError) bool { return e.Retryable }),
		}}

	fileResolutionType = &objectType[*parley.FileResolution]{name: "FileResolution", implementors: fileResolutionImplementors,
		fields: map[string]fieldCompiler[*parley.FileResolution]{
			"status":       enum(func(r *parley.FileResolution) parley.ProcessingStatus { return r.Status }),
			"content":      optStr(func(r *parley.FileResolution) *string { return r.OptContent() }),
			"truncated":    boolean(func(r *parley.FileResolution) bool { return r.Truncated }),
			"originalSize": optInteger(func(r *parley.FileResolution) *int { return r.OriginalSize }),
			"error":        optObject(processingErrorType, func(r *parley.FileResolution) *parley.ProcessingError { return r.Error }),
			"resolvedAt":   timestamp(func(r *parley.FileResolution) time.Time { return r.ResolvedAt }),
		}}

	toolCallType = &objectType[*model.ToolCall]{name: "ToolCall", implementors: toolCallImplementors,
		fields: map[string]fieldCompiler[*model.ToolCall]{
			"id":               str(func(c *model.ToolCall) string { return c.ID() }),
			"callId":           str(func(c *model.ToolCall) string { return c.CallID() }),
			"name":             str(func(c *model.ToolCall) string { return c.Name() }),
			"arguments":        scalar(func(w *jsonWriter, c *model.ToolCall) bool { return w.json(c.Call.Arguments) }),
			"argumentsRaw":     optStr(func(c *model.ToolCall) *string { return c.ArgumentsRaw() }),
			"argumentsValid":   boolean(func(c *model.ToolCall) bool { return c.ArgumentsValid() }),
			"partIndex":        optInteger(func(c *model.ToolCall) *int { return c.PartIndex() }),
			"itemId":           optStr(func(c *model.ToolCall) *string { return c.ItemID() }),
			"thoughtSignature": optStr(func(c *model.ToolCall) *string { return c.ThoughtSignature() }),
			"approvalStatus":   enum(func(c *model.ToolCall) parley.ApprovalStatus { return c.ApprovalStatus() }),
			"decision":         optObject(approvalDecisionType, func(c *model.ToolCall) *parley.ApprovalDecision { return c.Decision() }),
			"imported":         boolean(func(c *model.ToolCall) bool { return c.Imported() }),
		}}

	approvalDecisionType = &objectType[*parley.ApprovalDecision]{name: "ApprovalDecision", implementors: approvalDecisionImplementors,
		fields: map[string]fieldCompiler[*parley.ApprovalDecision]{
			"status":    enum(func(d *parley.ApprovalDecision) parley.ApprovalStatus { return d.Status }),
			"decidedBy": optStr(func(d *parley.ApprovalDecision) *string { return d.OptDecidedBy() }),
			"reason":    optStr(func(d *parley.ApprovalDecision) *string { return d.OptReason() }),
			"decidedAt": timestamp(func(d *parley.ApprovalDecision) time.Time { return d.DecidedAt }),
		}}

	toolErrorType = &objectType[*parley.ToolErrorDetail]{name: "ToolError", implementors: toolErrorImplementors,
		fields: map[string]fieldCompiler[*parley.ToolErrorDetail]{
			"message":     str(func(e *parley.ToolErrorDetail) string { return e.Message }),
			"stackTrace":  optStr(func(e *parley.ToolErrorDetail) *string { return e.OptStackTrace() }),
			"recoverable": boolean(func(e *parley.ToolErrorDetail) bool { return e.Recoverable }),
		}}
)
