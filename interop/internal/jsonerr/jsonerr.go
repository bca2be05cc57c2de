// Package jsonerr words JSON decoding failures for the importers' error messages, so
// that every format says what is wrong the same way: which field, what was wanted,
// what was found, where the input breaks off.
package jsonerr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Truncate shortens s for quoting in an error message, at a character boundary.
func Truncate(s string) string {
	if len(s) <= 60 {
		return s
	}
	cut := 57
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// Kind names the JSON type of raw: "an object", "an array", "a string"...
func Kind(raw []byte) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// GoKind names the JSON type a Go kind (reflect.Kind's String) decodes from. ptr is
// the importer's to word, since what a pointer field wants depends on the field.
func GoKind(kind, ptr string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "struct", "map":
		return "an object"
	case "ptr":
		return ptr
	case "slice":
		return "an array"
	}
	return "a number"
}

// TypeError returns err's *json.UnmarshalTypeError, or nil.
func TypeError(err error) *json.UnmarshalTypeError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te
	}
	return nil
}

// FieldProblem words a decoding error as ".field: want X, got Y", or ": not valid JSON".
// ptr words what a pointer field wants (see GoKind).
func FieldProblem(err error, ptr string) string {
	if te := TypeError(err); te != nil {
		return fmt.Sprintf(".%s: want %s, got %s", te.Field, GoKind(te.Type.Kind().String(), ptr), te.Value)
	}
	return ": not valid JSON"
}

// SyntaxProblem says where raw stops being JSON; unit names what raw is ("line",
// "input") for the message about a truncated one.
func SyntaxProblem(raw []byte, unit string) string {
	var v any
	err := json.Unmarshal(raw, &v)
	var se *json.SyntaxError
	switch {
	case len(bytes.TrimSpace(raw)) == 0:
		return "empty"
	case err == nil:
		return "unreadable"
	case err.Error() == "unexpected end of JSON input":
		return "it ends early: the " + unit + " is truncated"
	case errors.As(err, &se):
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	}
	return err.Error()
}
