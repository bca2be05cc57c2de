package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"

	"github.com/parley-dev/parley/internal/bufpool"
	"github.com/parley-dev/parley/internal/jsonscan"
)

// writeResponse writes the response of an executed operation as gqlgen's transports do,
// with json.Marshal, except for the commonest response, one with data and nothing else,
// which appendData writes (see the package comment: json.Marshal re-validates and
// re-compacts the data gqlgen has just written as JSON, byte by byte through
// encoding/json's scanner, a quarter of the CPU of reading a page of history). The bytes
// are the same either way: data_test.go checks them against gqlgen's POST transport.
// final holds the pieces of the data its resolvers wrote in their final form.
func writeResponse(w http.ResponseWriter, resp *graphql.Response, final *Final) {
	pieces := final.take()
	defer func() {
		for _, p := range pieces {
			bufpool.Put(p)
		}
	}()
	if resp != nil && len(resp.Errors) == 0 && len(resp.Data) > 0 && resp.Label == "" &&
		len(resp.Path) == 0 && resp.HasNext == nil && len(resp.Extensions) == 0 {
		if body, left, ok := appendDataLeaving(bufpool.Get(), resp.Data, pieces, nil, bigPiece); ok {
			// With its length the body is sent as it is; without, net/http chunks a body
			// larger than its 2 KiB buffer and sends the last chunk after the handler
			// returns, behind the access log, a write of its own that the client waits
			// for (a page of history is some 100 KiB).
			n := len(body)
			for _, l := range left {
				n += len(l.piece)
			}
			w.Header().Set("Content-Length", strconv.Itoa(n))
			at := 0
			for _, l := range left {
				if l.at > at {
					w.Write(body[at:l.at])
				}
				w.Write(l.piece)
				at = l.at
			}
			w.Write(body[at:])
			bufpool.Put(body) // Write has copied it out or sent it
			dataWritten.Add(1)
			return
		}
	}
	if resp != nil && len(pieces) > 0 {
		resp.Data = placePieces(resp.Data, pieces)
	}
	b, err := json.Marshal(resp)
	if err != nil {
		panic(fmt.Errorf("unable to marshal %s: %w", string(resp.Data), err))
	}
	w.Write(b)
}

// Final collects the pieces of one response's data that its resolvers wrote in their
// final form, as appendData would write them (AppendFinal), so that appendData copies
// them instead of scanning them again: package graph's page writer writes a page of
// history so, which was most of what appendData scanned (8-11% of a history read's CPU,
// issue 15 §6). gqlgen's data holds a placeholder byte where each piece goes (Place),
// so that the piece is neither copied into gqlgen's buffer, which grows to hold it, nor
// looked for there.
type Final struct {
	mu     sync.Mutex
	pieces [][]byte
}

// placeholder stands for a piece in gqlgen's data. It never appears in JSON as gqlgen
// writes it: a control character, escaped in strings, and no token outside them.
const placeholder = 0

var placeholderBytes = []byte{placeholder}

type finalKey struct{}

// withFinal returns ctx with a Final for the response about to be executed.
func withFinal(ctx context.Context) (context.Context, *Final) {
	f := &Final{}
	return context.WithValue(ctx, finalKey{}, f), f
}

// FinalOf returns the Final of the response ctx is executing, or nil when its data will
// not be written by appendData (a websocket sends it as gqlgen writes it): its resolvers
// must then write what gqlgen writes.
func FinalOf(ctx context.Context) *Final {
	f, _ := ctx.Value(finalKey{}).(*Final)
	return f
}

// Place hands over piece, JSON in its final form (a value: compact, escaped as
// AppendFinal escapes), as the value gqlgen is writing to out, its response's data: out
// gets a placeholder, which the response's writer replaces with piece. piece is a
// bufpool buffer, which the response puts back once written.
func (f *Final) Place(out io.Writer, piece []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out.Write(placeholderBytes)
	f.pieces = append(f.pieces, piece)
}

func (f *Final) take() [][]byte {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pieces
	f.pieces = nil
	return p
}

// dataWritten counts the responses written by appendData.
var dataWritten atomic.Int64

// HTMLEscape returns the escape json.Marshal writes, and gqlgen does not, for the
// character that begins at s[i] when it is <, >, &, U+2028 or U+2029, and how many bytes
// of s it stands for; n is 0 when s[i] begins none of them. AppendFinal applies it to
// the strings of gqlgen's JSON, and package graph's page writer to the strings it
// writes in their final form.
func HTMLEscape[T ~string | ~[]byte](s T, i int) (esc string, n int) {
	switch s[i] {
	case '<':
		return `\u003c`, 1
	case '>':
		return `\u003e`, 1
	case '&':
		return `\u0026`, 1
	case 0xE2: // U+2028 and U+2029 begin so, as do other runes
		if i+2 < len(s) && s[i+1] == 0x80 {
			switch s[i+2] {
			case 0xA8:
				return `\u2028`, 3
			case 0xA9:
				return `\u2029`, 3
			}
		}
	}
	return "", 0
}

// appendData appends {"data":data} to b as json.Marshal writes a graphql.Response
// holding only data (AppendFinal), and reports false when it cannot (the response is
// then left to json.Marshal). pieces are pieces of data already in their final form
// (Final), in their order, each standing in data as a placeholder: each is copied
// there without looking at it again.
func appendData(b, data []byte, pieces [][]byte) ([]byte, bool) {
	b, _, ok := appendDataLeaving(b, data, pieces, nil, math.MaxInt)
	return b, ok
}

// bigPiece is the size from which writeResponse writes a piece (Final) on its own
// instead of copying it into the response's body: a transcript is megabytes, which
// the copy grew a buffer to hold and then wrote out again.
const bigPiece = 256 << 10

// leftPiece is a piece appendDataLeaving left out of the body it wrote: it goes at
// offset at of the body.
type leftPiece struct {
	at    int
	piece []byte
}

// appendDataLeaving is appendData, except that each piece of at least big bytes is not
// copied into b but appended to left with where in b it goes, in order.
func appendDataLeaving(b, data []byte, pieces [][]byte, left []leftPiece, big int) ([]byte, []leftPiece, bool) {
	b = append(b, `{"data":`...)
	ok := true
	for _, p := range pieces {
		i := bytes.IndexByte(data, placeholder)
		if i < 0 {
			return nil, nil, false
		}
		// A placeholder inside a string (which gqlgen never writes) ends the scan before
		// it there: ok is false.
		if b, ok = AppendFinal(b, data[:i]); !ok {
			return nil, nil, false
		}
		if len(p) >= big {
			left = append(left, leftPiece{at: len(b), piece: p})
		} else {
			b = append(b, p...)
		}
		piecesCopied.Add(1)
		data = data[i+1:]
	}
	if b, ok = AppendFinal(b, data); !ok {
		return nil, nil, false
	}
	return append(b, '}'), left, true
}

// placePieces returns data with each placeholder replaced by its piece (Final), for
// json.Marshal.
func placePieces(data []byte, pieces [][]byte) []byte {
	n := len(data)
	for _, p := range pieces {
		n += len(p)
	}
	out := make([]byte, 0, n)
	for _, p := range pieces {
		i := bytes.IndexByte(data, placeholder)
		if i < 0 {
			break
		}
		out = append(append(out, data[:i]...), p...)
		data = data[i+1:]
	}
	return append(out, data...)
}

// piecesCopied counts the pieces appendData copied without scanning them.
var piecesCopied atomic.Int64

// AppendFinal appends data, JSON as gqlgen writes it, to b in the final form of a
// response's data, as json.Marshal writes it: compacted (whitespace outside strings
// dropped), with <, >, & and U+2028, U+2029 escaped as encoding/json escapes them. It
// does not validate data; it reports false when data ends inside a string.
func AppendFinal(b, data []byte) ([]byte, bool) {
	start, i, n, inString := 0, 0, len(data), false
	for {
		if i, inString = nextChange(data, i, inString); i == n {
			break
		}
		b = append(b, data[start:i]...)
		if inString {
			esc, m := HTMLEscape(data, i)
			b = append(b, esc...)
			i += m
		} else {
			i++ // whitespace between tokens: dropped
		}
		start = i
	}
	if inString {
		return nil, false
	}
	return append(b, data[start:]...), true
}

// IsFinal reports whether data, JSON as gqlgen writes it, is already in the final form
// of a response's data: whether AppendFinal would append it unchanged (nothing to
// compact or escape, and not ending inside a string).
func IsFinal(data []byte) bool {
	i, inString := nextChange(data, 0, false)
	return i == len(data) && !inString
}

// nextChange scans data from i (inString: i is inside a string) for the first byte
// AppendFinal does not copy as it is: a character it escapes inside a string, or
// whitespace between tokens. It returns that byte's index and whether it is inside a
// string, or len(data) and whether data ends inside a string when there is none.
func nextChange(data []byte, i int, inString bool) (int, bool) {
	n := len(data)
	for i < n {
		if inString {
			i = jsonscan.InString(data, i, &stringSpecial)
			if i == n {
				break
			}
			switch data[i] {
			case '\\':
				i += 2 // the escaped byte is never special
				continue
			case '"':
				inString = false
				i++
				continue
			}
			if _, m := HTMLEscape(data, i); m > 0 {
				return i, true
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
		if data[i] != '"' {
			return i, false
		}
		inString = true
		i++
	}
	return n, inString
}

// stringSpecial and valueSpecial mark the bytes appendData looks at inside strings
// (found eight at a time by jsonscan.InString, which supports these) and between them.
var stringSpecial, valueSpecial [256]bool

func init() {
	for _, c := range []byte{'\\', '"', '<', '>', '&', 0xE2} {
		stringSpecial[c] = true
	}
	for _, c := range []byte{'"', ' ', '\t', '\n', '\r'} {
		valueSpecial[c] = true
	}
}
