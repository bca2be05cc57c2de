package db

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/parley-dev/parley"
)

// The payloads, results and provenance of the messages an import writes are encoded by
// hand here, byte for byte as encoding/json encodes them (TestAppendJSONIsMarshal):
// json.Marshal's reflection was a third of encoding an imported message (0.15 s of CPU
// for the 100,000 of the bench's session). Shapes with a field these do not write (a
// part's raw JSON or citations, a result's output) go through json.Marshal as before.

// appendBodyPayload appends b's bodyPayload as json.Marshal(encodeBody(b)) does; ok is
// false, with dst unchanged, when a part has raw JSON or citations.
func appendBodyPayload(dst []byte, b parley.Body) (out []byte, ok bool) {
	for _, p := range b.Parts {
		if len(p.Raw) != 0 || len(p.Citations) != 0 {
			return dst, false
		}
	}
	return appendBodyFields(append(dst, '{'), b, false), true
}

// appendBodyFields appends the "parts" field of b's bodyPayload (nothing when it has
// none), after a field when comma, and closes the object.
func appendBodyFields(dst []byte, b parley.Body, comma bool) []byte {
	if len(b.Parts) > 0 {
		if comma {
			dst = append(dst, ',')
		}
		dst = append(dst, `"parts":[`...)
		for i, p := range b.Parts {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"kind":`...)
			dst = appendJSONString(dst, string(p.Kind))
			dst = append(dst, `,"content":`...)
			dst = appendJSONString(dst, parley.EscapeHTML(p.Text))
			dst = appendOptString(dst, "signature", p.Signature)
			dst = appendOptString(dst, "itemId", p.ItemID)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendToolResults appends [r] as json.Marshal([]toolResultJSON{r}) does; ok is false,
// with dst unchanged, when r has an output, a duration, a time or an original size.
func appendToolResults(dst []byte, r *toolResultJSON) (out []byte, ok bool) {
	if r.Output != nil || r.OutputRaw != nil || r.DurationMs != nil || r.ExecutedAt != nil || r.OriginalSize != nil {
		return dst, false
	}
	dst = append(dst, `[{"toolCallId":`...)
	dst = appendJSONString(dst, r.ToolCallID)
	dst = appendOptString(dst, "toolName", r.ToolName)
	dst = append(dst, `,"status":`...)
	dst = appendJSONString(dst, string(r.Status))
	if e := r.Error; e != nil {
		dst = append(dst, `,"error":{"message":`...)
		dst = appendJSONString(dst, e.Message)
		dst = appendOptString(dst, "stackTrace", e.StackTrace)
		dst = append(dst, `,"recoverable":`...)
		dst = strconv.AppendBool(dst, e.Recoverable)
		dst = append(dst, '}')
	}
	if r.Truncated {
		dst = append(dst, `,"truncated":true`...)
	}
	return append(dst, "}]"...), true
}

// appendToolCalls appends calls as json.Marshal(encodeToolCalls(calls)) does; ok is
// false, with dst unchanged, when json.Marshal would fail (arguments that are not JSON,
// a decision's time it cannot write).
func appendToolCalls(dst []byte, calls []parley.ToolCall) ([]byte, bool) {
	n0 := len(dst)
	dst = append(dst, '[')
	for i := range calls {
		c := &calls[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst = appendJSONString(dst, c.ID)
		dst = append(dst, `,"name":`...)
		dst = appendJSONString(dst, c.Name)
		dst = append(dst, `,"arguments":`...)
		args, ok := appendRawJSON(dst, c.Arguments)
		if !ok {
			return dst[:n0], false
		}
		dst = args
		if c.ArgumentsRaw != nil {
			dst = append(dst, `,"argumentsRaw":`...)
			dst = appendJSONString(dst, *c.ArgumentsRaw)
		}
		if c.ArgumentsInvalid {
			dst = append(dst, `,"argumentsInvalid":true`...)
		}
		if c.PartIndex != nil {
			dst = append(dst, `,"partIndex":`...)
			dst = strconv.AppendInt(dst, int64(*c.PartIndex), 10)
		}
		dst = appendOptString(dst, "itemId", c.ItemID)
		dst = appendOptString(dst, "thoughtSignature", c.ThoughtSignature)
		dst = append(dst, `,"approvalStatus":`...)
		dst = appendJSONString(dst, string(c.ApprovalStatus))
		if d := c.Decision; d != nil {
			dst = append(dst, `,"decision":{"status":`...)
			dst = appendJSONString(dst, string(d.Status))
			dst = appendOptString(dst, "decidedBy", d.DecidedBy)
			dst = appendOptString(dst, "reason", d.Reason)
			dst = append(dst, `,"decidedAt":"`...)
			at, err := d.DecidedAt.AppendText(dst) // time.Time's MarshalJSON, unquoted
			if err != nil {
				return dst[:n0], false
			}
			dst = at
			dst = append(dst, `"}`...)
		}
		if c.Imported {
			dst = append(dst, `,"imported":true`...)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']'), true
}

// appendRawJSON appends j as json.Marshal writes a parley.JSON: null when empty, else
// compacted, with <, >, &, U+2028 and U+2029 escaped; ok is false when j is not JSON.
func appendRawJSON(dst []byte, j parley.JSON) ([]byte, bool) {
	if len(j) == 0 {
		return append(dst, "null"...), true
	}
	var compact, escaped bytes.Buffer
	if json.Compact(&compact, j) != nil {
		return dst, false
	}
	json.HTMLEscape(&escaped, compact.Bytes())
	return append(dst, escaped.Bytes()...), true
}

// appendProvenance appends j as json.Marshal(j) does.
func appendProvenance(dst []byte, j *provenanceJSON) []byte {
	dst = append(dst, '{')
	comma := false
	key := func(name string) { // a field's name, after a comma unless it is the object's first
		if comma {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, `":`...)
		comma = true
	}
	str := func(name, v string) {
		if v != "" {
			key(name)
			dst = appendJSONString(dst, v)
		}
	}
	num := func(name string, v int64) {
		if v != 0 {
			key(name)
			dst = strconv.AppendInt(dst, v, 10)
		}
	}
	str("provider", j.Provider)
	str("model", j.Model)
	str("responseId", j.ResponseID)
	str("finishReason", j.FinishReason)
	if comma {
		dst = append(dst, ',')
	}
	dst = append(dst, `"usage":{`...)
	comma = false
	num("input", j.Usage.Input)
	num("output", j.Usage.Output)
	num("cachedInput", j.Usage.CachedInput)
	num("cacheCreation", j.Usage.CacheCreation)
	num("reasoning", j.Usage.Reasoning)
	dst = append(dst, '}')
	comma = true
	num("ttftMs", j.TimeToFirstTokenMs)
	num("durationMs", j.DurationMs)
	return append(dst, '}')
}

// appendOptString appends the field name with the string v, after a comma, as
// encoding/json writes a field tagged omitempty: nothing when v is empty.
func appendOptString(dst []byte, name, v string) []byte {
	if v == "" {
		return dst
	}
	dst = append(dst, `,"`...)
	dst = append(dst, name...)
	dst = append(dst, `":`...)
	return appendJSONString(dst, v)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string exactly as encoding/json writes a string
// (its appendString, with HTML escaping, as json.Marshal does: Go's BSD-licensed code,
// go/src/encoding/json/encode.go): <, > and & escaped, control characters as \b, \f,
// \n, \r, \t or \u00XX, invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// jsonSafe are the ASCII bytes appendJSONString writes as they are: encoding/json's
// htmlSafeSet.
var jsonSafe = func() (set [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		switch b {
		case '"', '\\', '<', '>', '&':
		default:
			set[b] = true
		}
	}
	return set
}()
