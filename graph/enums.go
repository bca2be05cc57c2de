package graph

import (
	"context"
	"slices"

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
		if v, ok := op.Variables[d.Variable]; ok {
			if err := s.check(ast.Path{ast.PathName("variable"), ast.PathName(d.Variable)}, d.Type, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *strictEnums) check(path ast.Path, t *ast.Type, v any) *gqlerror.Error {
	if v == nil {
		return nil
	}
	if t.Elem != nil {
		list, ok := v.([]any)
		if !ok { // a single value stands for a list of one
			return s.check(path, t.Elem, v)
		}
		for i, e := range list {
			if err := s.check(append(slices.Clip(path), ast.PathIndex(i)), t.Elem, e); err != nil {
				return err
			}
		}
		return nil
	}
	def := s.schema.Types[t.NamedType]
	switch {
	case def == nil:
	case def.Kind == ast.Enum:
		name, _ := v.(string)
		if def.EnumValues.ForName(name) == nil {
			err := gqlerror.ErrorPathf(path, "%v is not a valid %s", v, def.Name)
			errcode.Set(err, errcode.ValidationFailed)
			return err
		}
	case def.Kind == ast.InputObject:
		fields, _ := v.(map[string]any)
		for _, f := range def.Fields {
			if fv, ok := fields[f.Name]; ok {
				if err := s.check(append(slices.Clip(path), ast.PathName(f.Name)), f.Type, fv); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
