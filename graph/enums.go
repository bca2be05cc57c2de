package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// strictEnums refuses an enum value in the variables that names one of the enum's
// values only when case is ignored ("user" for USER). gqlparser's variable validation
// compares enum values with strings.EqualFold, and the enums are bound with gqlgen's
// enum_values (gqlgen.yml), whose unmarshalers look the value up in a map: "user" would
// pass as a Role and reach the resolver as the zero value. The spec wants the exact
// name; this answers as gqlparser does for a value it does not know. Enum literals in
// the document are already checked exactly by validation.
type strictEnums struct{ schema *ast.Schema }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = (*strictEnums)(nil)

func (*strictEnums) ExtensionName() string { return "StrictEnums" }

func (s *strictEnums) Validate(es graphql.ExecutableSchema) error {
	s.schema = es.Schema()
	return nil
}

// MutateOperationContext checks the variables, which gqlparser has validated otherwise.
func (s *strictEnums) MutateOperationContext(_ context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil {
		return nil
	}
	for _, d := range op.Operation.VariableDefinitions {
		v, ok := op.Variables[d.Variable]
		if !ok {
			continue
		}
		if bad, enum, at := s.check(d.Type, v); enum != "" {
			path := append(ast.Path{ast.PathName("variable"), ast.PathName(d.Variable)}, at...)
			err := gqlerror.ErrorPathf(path, "%v is not a valid %s", bad, enum)
			errcode.Set(err, errcode.ValidationFailed)
			return err
		}
	}
	return nil
}

// check looks for a misspelled enum value in v, of type t. It returns the value, its
// enum's name and where it is below v (built only then: a request that passes
// allocates nothing here), or an empty enum name.
func (s *strictEnums) check(t *ast.Type, v any) (bad any, enum string, at ast.Path) {
	if v == nil {
		return nil, "", nil
	}
	if t.Elem != nil {
		list, ok := v.([]any)
		if !ok { // a single value stands for a list of one
			return s.check(t.Elem, v)
		}
		for i, e := range list {
			if bad, enum, at := s.check(t.Elem, e); enum != "" {
				return bad, enum, append(ast.Path{ast.PathIndex(i)}, at...)
			}
		}
		return nil, "", nil
	}
	def := s.schema.Types[t.NamedType]
	switch {
	case def == nil:
	case def.Kind == ast.Enum:
		if name, _ := v.(string); def.EnumValues.ForName(name) == nil {
			return v, def.Name, nil
		}
	case def.Kind == ast.InputObject:
		fields, _ := v.(map[string]any)
		for _, f := range def.Fields {
			if fv, ok := fields[f.Name]; ok {
				if bad, enum, at := s.check(f.Type, fv); enum != "" {
					return bad, enum, append(ast.Path{ast.PathName(f.Name)}, at...)
				}
			}
		}
	}
	return nil, "", nil
}
