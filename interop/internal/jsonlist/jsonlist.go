// Package jsonlist writes JSON as encoding/json writes it, HTML escaping included: arrays
// of values that marshal themselves (the provider SDKs' request params), each value's
// bytes as it wrote them, and the strings and raw values of the exporters that write
// the providers' shapes directly.
package jsonlist

import (
	"bytes"
	"encoding/json"

	segmentjson "github.com/segmentio/encoding/json"
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
		var err error
		if dst, err = AppendMarshaler(dst, it); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

// AppendMarshaler appends v's JSON as encoding/json.Marshal(v) writes it, for a v whose
// marshaler writes compact, valid JSON (the SDKs' params).
func AppendMarshaler(dst []byte, v json.Marshaler) ([]byte, error) {
	b, err := v.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return appendHTMLEscaped(dst, b), nil
}

// AppendString appends s as a JSON string, byte for byte as encoding/json.Marshal(s)
// writes it (<, >, &, U+2028 and U+2029 escaped, invalid UTF-8 as U+FFFD): segmentio's
// encoder, which FuzzAppendString holds to encoding/json's output.
func AppendString(dst []byte, s string) []byte {
	return segmentjson.AppendEscape(dst, s, segmentjson.EscapeHTML)
}

// EscapedSize is about how many bytes AppendString writes of s, without looking at s:
// its length, its quotes and room for one escape in sixteen bytes (a line of text with a
// tab or two and its newline), to size a buffer before writing.
func EscapedSize(s string) int {
	return len(s) + len(s)/16 + 2
}

// AppendRaw appends raw JSON as encoding/json.Marshal(json.RawMessage(raw)) writes it:
// compacted and HTML-escaped, empty as null (as a nil json.RawMessage), refused when it
// is not JSON.
func AppendRaw(dst []byte, raw []byte) ([]byte, error) {
	if len(raw) == 0 {
		return append(dst, "null"...), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return appendHTMLEscaped(dst, buf.Bytes()), nil
}

// appendHTMLEscaped appends b with <, >, &, U+2028 and U+2029 escaped, as
// encoding/json's compaction of a marshaler's output does (outside strings those
// characters cannot occur in valid JSON).
func appendHTMLEscaped(dst, b []byte) []byte {
	// bytes.IndexAny decodes every rune when the set holds one that is not ASCII: U+2028
	// and U+2029 both start with 0xE2, a byte ASCII sets can look for.
	if bytes.IndexAny(b, "<>&") < 0 && bytes.IndexByte(b, 0xE2) < 0 {
		return append(dst, b...)
	}
	var buf bytes.Buffer
	json.HTMLEscape(&buf, b)
	return append(dst, buf.Bytes()...)
}
