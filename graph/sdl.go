package graph

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/formatter"
)

// SDL returns the whole schema (schema.graphqls and graph/schema/*.graphqls) as one
// SDL document, with its descriptions and directives (@oneOf on MessageInput), for
// client code generators (graphql-codegen, Relay's compiler) that want one file.
func SDL() string {
	var buf bytes.Buffer
	formatter.NewFormatter(&buf, formatter.WithIndent("  ")).FormatSchema(NewExecutableSchema(Config{}).Schema())
	return buf.String()
}

// PossibleTypes returns, for every interface and union, the object types that
// implement it or belong to it, sorted: Apollo Client's possibleTypes (without it,
// Apollo cannot match fragments on MessageBase or the Message union and drops their
// fields) and urql's schema awareness need it.
func PossibleTypes() map[string][]string {
	s := NewExecutableSchema(Config{}).Schema()
	out := map[string][]string{}
	for name, def := range s.Types {
		if (def.Kind != ast.Interface && def.Kind != ast.Union) || strings.HasPrefix(name, "__") {
			continue
		}
		var names []string
		for _, t := range s.GetPossibleTypes(def) {
			if t.Kind == ast.Object { // MessageBase implements Node too: objects only, as graphql-codegen lists them
				names = append(names, t.Name)
			}
		}
		slices.Sort(names)
		out[name] = names
	}
	return out
}

// PossibleTypesJSON is PossibleTypes as indented JSON.
func PossibleTypesJSON() []byte {
	b, _ := json.MarshalIndent(PossibleTypes(), "", "  ") // a map of string slices
	return append(b, '\n')
}
