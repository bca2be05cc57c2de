package parley

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// JSON is a JSON value kept as its encoding: tool arguments, outputs, control params.
// The API passes it through as given (Postgres's jsonb may reorder object keys).
type JSON json.RawMessage

// IsNull reports whether j is absent or the JSON null.
func (j JSON) IsNull() bool {
	t := bytes.TrimSpace(j)
	return len(t) == 0 || string(t) == "null"
}

// IsObject reports whether j encodes a JSON object.
func (j JSON) IsObject() bool {
	t := bytes.TrimSpace(j)
	return len(t) > 0 && t[0] == '{'
}

// MarshalJSON returns j itself, or null when empty.
func (j JSON) MarshalJSON() ([]byte, error) {
	if len(j) == 0 {
		return []byte("null"), nil
	}
	return j, nil
}

// UnmarshalJSON keeps a copy of data.
func (j *JSON) UnmarshalJSON(data []byte) error {
	*j = append((*j)[:0], data...)
	return nil
}

// MarshalGQL writes j as a JSON value.
func (j JSON) MarshalGQL(w io.Writer) {
	if len(j) == 0 {
		io.WriteString(w, "null")
		return
	}
	w.Write(j)
}

// UnmarshalGQL encodes the decoded GraphQL value (map, slice, json.Number...) as JSON.
func (j *JSON) UnmarshalGQL(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("not a JSON value: %w", err)
	}
	*j = b
	return nil
}

// MaxJSONDepth bounds how deeply a JSON value's arrays and objects may nest. Real tool
// arguments and outputs nest a few levels; Postgres parses jsonb recursively and fails
// deep values with "stack depth limit exceeded" (at a depth that depends on its
// max_stack_depth), and every reader of a value recurses too.
const MaxJSONDepth = 128

// checkJSON reports why raw cannot be stored as jsonb: it is not JSON, it nests deeper
// than MaxJSONDepth, or one of its strings holds a NUL, which Postgres's jsonb refuses.
func checkJSON(field string, raw JSON) error {
	if !json.Valid(raw) {
		return Errorf(EINVALID, "%s: not valid JSON", field)
	}
	if d := jsonNesting(raw); d > MaxJSONDepth {
		return Errorf(EINVALID, "%s: JSON nested %d deep, at most %d allowed", field, d, MaxJSONDepth)
	}
	if !bytes.Contains(raw, []byte(`\u0000`)) {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return Errorf(EINVALID, "%s: not valid JSON", field)
	}
	if hasNUL(v) {
		return Errorf(EINVALID, "%s: JSON strings may not contain NUL (\\u0000)", field)
	}
	return nil
}

// jsonNesting returns how deeply the arrays and objects of raw, valid JSON, nest.
func jsonNesting(raw []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

func hasNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return bytes.IndexByte([]byte(v), 0) >= 0
	case []any:
		for _, e := range v {
			if hasNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if hasNUL(k) || hasNUL(e) {
				return true
			}
		}
	}
	return false
}
