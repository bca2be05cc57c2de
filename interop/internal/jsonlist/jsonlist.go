// Package jsonlist writes JSON arrays of values that marshal themselves (the provider
// SDKs' request params), each value's bytes as it wrote them.
package jsonlist

import (
	"bytes"
	"encoding/json"
)

// Append appends the JSON array of items to dst. encoding/json.Marshal of a slice of
// json.Marshalers checks and compacts every element's output again (and escapes HTML in
// it): for a transcript of thousands of messages that second pass was a seventh of
// the export's CPU. The SDKs' marshalers write compact, valid JSON already; Append
// escapes <, > and & as encoding/json would, so that the bytes are the same.
func Append[T json.Marshaler](dst []byte, items []T) ([]byte, error) {
	dst = append(dst, '[')
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		b, err := it.MarshalJSON()
		if err != nil {
			return nil, err
		}
		dst = appendHTMLEscaped(dst, b)
	}
	return append(dst, ']'), nil
}

// appendHTMLEscaped appends b with <, >, &, U+2028 and U+2029 escaped, as
// encoding/json's compaction of a marshaler's output does (outside strings those
// characters cannot occur in valid JSON).
func appendHTMLEscaped(dst, b []byte) []byte {
	if bytes.IndexAny(b, "<>&\u2028\u2029") < 0 {
		return append(dst, b...)
	}
	var buf bytes.Buffer
	json.HTMLEscape(&buf, b)
	return append(dst, buf.Bytes()...)
}
