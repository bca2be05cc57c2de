package model

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/parley-dev/parley"
)

// MarshalTime writes the Time scalar as gqlgen's graphql.MarshalTime does: RFC 3339
// with nanoseconds, the zero time as null.
func MarshalTime(t time.Time) graphql.ContextMarshaler {
	if t.IsZero() {
		return graphql.Null // for a Time!, gqlgen's "null which the schema does not allow"
	}
	return graphql.ContextWriterFunc(func(_ context.Context, w io.Writer) error {
		_, err := io.WriteString(w, strconv.Quote(t.Format(time.RFC3339Nano)))
		return err
	})
}

// UnmarshalTime reads the Time scalar: an RFC 3339 string, as gqlgen's
// graphql.UnmarshalTime reads it. Anything else is the caller's error (EINVALID), naming
// the input field, where gqlgen's plain error became "Internal server error."
func UnmarshalTime(ctx context.Context, v any) (time.Time, error) {
	t, err := graphql.UnmarshalTime(v)
	if err == nil {
		return t, nil
	}
	return time.Time{}, parley.Errorf(parley.EINVALID, "%s: %s is not a time: give an RFC 3339 date and time such as 2026-01-02T15:04:05Z",
		inputPath(ctx), describe(v))
}

// inputPath names the input value being read, from the field's argument on
// ("input.mcpResource.retrievedAt").
func inputPath(ctx context.Context) string {
	path := graphql.GetPath(ctx)
	if fc := graphql.GetFieldContext(ctx); fc != nil && len(fc.Path()) < len(path) {
		path = path[len(fc.Path()):] // from the field whose arguments these are
	}
	var b strings.Builder
	for _, el := range path {
		switch el := el.(type) {
		case ast.PathIndex:
			fmt.Fprintf(&b, "[%d]", int(el))
		case ast.PathName:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(string(el))
		}
	}
	return b.String()
}

// describe shows a bad value, cut short.
func describe(v any) string {
	s := fmt.Sprintf("%q", fmt.Sprint(v))
	if _, ok := v.(string); !ok {
		s = fmt.Sprintf("%v (a %T)", v, v)
	}
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
