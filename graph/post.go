package graph

import (
	"context"
	"net/http"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
)

// postTransport is gqlgen's POST transport with a cheaper way of writing the commonest
// response, one with data and nothing else. gqlgen writes every response with
// json.Marshal, which re-validates and re-compacts the data gqlgen has just written as
// JSON, byte by byte through encoding/json's scanner: a quarter of the CPU of reading a
// page of history (bench/report.md). appendData writes the same bytes in one plain pass.
// Everything else (reading and checking the request, statuses, headers, responses with
// errors or extensions) is gqlgen's own, untouched: postTransport hands POST.Do an
// executor whose data-only responses it writes itself, and drops the empty response
// gqlgen then writes in their place. post_test.go checks that the answers are gqlgen's,
// byte for byte.
type postTransport struct{ transport.POST }

// Do implements graphql.Transport.
func (t postTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	pw := &postWriter{ResponseWriter: w}
	t.POST.Do(pw, r, dataWriter{GraphExecutor: exec, w: pw})
}

// dataWriter writes the data-only responses of the operations it dispatches.
type dataWriter struct {
	graphql.GraphExecutor
	w *postWriter
}

// DispatchOperation implements graphql.GraphExecutor.
func (d dataWriter) DispatchOperation(ctx context.Context, rc *graphql.OperationContext) (graphql.ResponseHandler, context.Context) {
	next, ctx := d.GraphExecutor.DispatchOperation(ctx, rc)
	return func(ctx context.Context) *graphql.Response {
		resp := next(ctx)
		if resp == nil || d.w.wrote || len(resp.Errors) > 0 || len(resp.Data) == 0 || resp.Label != "" ||
			len(resp.Path) > 0 || resp.HasNext != nil || len(resp.Extensions) > 0 {
			return resp
		}
		body, ok := appendData(getBuffer()[:0], resp.Data)
		if !ok {
			return resp
		}
		d.w.Write(body)
		putBuffer(body) // Write has copied it out or sent it
		d.w.wrote = true
		dataWritten.Add(1)
		return &graphql.Response{} // what gqlgen writes of it is dropped
	}, ctx
}

// dataWritten counts the responses written by appendData.
var dataWritten atomic.Int64

// postWriter drops what is written after a dataWriter has written the response.
type postWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *postWriter) Write(p []byte) (int, error) {
	if w.wrote {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the writer underneath.
func (w *postWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// lowerHex is encoding/json's hex alphabet (gqlgen's is upper case).
const lowerHex = "0123456789abcdef"

// appendData appends {"data":data} to b as json.Marshal writes a graphql.Response
// holding only data: data compacted (whitespace outside strings dropped), with <, >, &
// and U+2028, U+2029 escaped as encoding/json escapes them. It does not validate data,
// which gqlgen has written as JSON; it reports false when data ends inside a string, and
// the response is then left to json.Marshal.
func appendData(b, data []byte) ([]byte, bool) {
	b = append(b, `{"data":`...)
	inString := false
	start, i, n := 0, 0, len(data)
	for i < n {
		if inString {
			for i < n && !stringSpecial[data[i]] {
				i++
			}
			if i == n {
				break
			}
			switch c := data[i]; c {
			case '\\':
				i += 2 // the escaped byte is never special
				continue
			case '"':
				inString = false
			case '<', '>', '&':
				b = append(b, data[start:i]...)
				b = append(b, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xf])
				start = i + 1
			default: // 0xE2: the first byte of U+2028 and U+2029, and of other runes
				if i+2 < n && data[i+1] == 0x80 && data[i+2]&^1 == 0xA8 {
					b = append(b, data[start:i]...)
					b = append(b, '\\', 'u', '2', '0', '2', lowerHex[data[i+2]&0xf])
					i += 2
					start = i + 1
				}
			}
			i++
			continue
		}
		for i < n && !valueSpecial[data[i]] {
			i++
		}
		if i == n {
			break
		}
		if data[i] == '"' {
			inString = true
		} else { // whitespace between tokens
			b = append(b, data[start:i]...)
			start = i + 1
		}
		i++
	}
	if inString {
		return nil, false
	}
	b = append(b, data[start:]...)
	return append(b, '}'), true
}

// stringSpecial and valueSpecial mark the bytes appendData looks at inside strings and
// between them.
var stringSpecial, valueSpecial [256]bool

func init() {
	for _, c := range []byte{'\\', '"', '<', '>', '&', 0xE2} {
		stringSpecial[c] = true
	}
	for _, c := range []byte{'"', ' ', '\t', '\n', '\r'} {
		valueSpecial[c] = true
	}
}
