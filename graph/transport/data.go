package transport

import (
	"encoding/json"
	"fmt"
	"net/http"
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
func writeResponse(w http.ResponseWriter, resp *graphql.Response) {
	if resp != nil && len(resp.Errors) == 0 && len(resp.Data) > 0 && resp.Label == "" &&
		len(resp.Path) == 0 && resp.HasNext == nil && len(resp.Extensions) == 0 {
		if body, ok := appendData(bufpool.Get(), resp.Data); ok {
			w.Write(body)
			bufpool.Put(body) // Write has copied it out or sent it
			dataWritten.Add(1)
			return
		}
	}
	b, err := json.Marshal(resp)
	if err != nil {
		panic(fmt.Errorf("unable to marshal %s: %w", string(resp.Data), err))
	}
	w.Write(b)
}

// dataWritten counts the responses written by appendData.
var dataWritten atomic.Int64

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
			i = jsonscan.InString(data, i, &stringSpecial)
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
