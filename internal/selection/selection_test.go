package selection_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/selection"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// TestMessageFieldsSelectsEveryField checks MessageFields against the schema: it must
// be a valid selection on Message and, for every variant, select every field of the
// variant and of every object type below it.
func TestMessageFieldsSelectsEveryField(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../graph/schema/*.graphqls")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../schema.graphqls")
	var sources []*ast.Source
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, &ast.Source{Name: f, Input: string(b)})
	}
	schema, gqlErr := gqlparser.LoadSchema(sources...)
	if gqlErr != nil {
		t.Fatalf("load schema: %v", gqlErr)
	}
	doc, errs := gqlparser.LoadQuery(schema, `query($id: ID!) { node(id: $id) { ... on Message {`+selection.MessageFields+`} } }`)
	if len(errs) > 0 {
		t.Fatalf("MessageFields is not a valid selection: %v", errs)
	}
	node := doc.Operations[0].SelectionSet[0].(*ast.Field)
	frag := node.SelectionSet[0].(*ast.InlineFragment)
	message := schema.Types["Message"]
	if got := len(schema.GetPossibleTypes(message)); got == 0 {
		t.Fatal("Message has no variants")
	}
	for _, missing := range missingFields(schema, message, []ast.SelectionSet{frag.SelectionSet}, "Message") {
		t.Errorf("MessageFields misses %s", missing)
	}
}

// missingFields lists, as Type.path.field, the fields of every concrete type of def that
// the selection sets do not select.
func missingFields(schema *ast.Schema, def *ast.Definition, sets []ast.SelectionSet, path string) []string {
	var missing []string
	for _, concrete := range schema.GetPossibleTypes(def) {
		selected := map[string][]ast.SelectionSet{}
		collect(schema, concrete, sets, selected)
		for _, f := range concrete.Fields {
			if strings.HasPrefix(f.Name, "__") {
				continue
			}
			at := path + "." + f.Name
			if def.IsAbstractType() {
				at = concrete.Name + "." + f.Name
			}
			subs, ok := selected[f.Name]
			if !ok {
				missing = append(missing, at)
				continue
			}
			if inner := schema.Types[f.Type.Name()]; inner.IsCompositeType() {
				missing = append(missing, missingFields(schema, inner, subs, at)...)
			}
		}
	}
	return missing
}

// collect gathers the fields that sets select on an object of type concrete, with the
// selection sets asked below each (a field may be selected in several fragments).
func collect(schema *ast.Schema, concrete *ast.Definition, sets []ast.SelectionSet, into map[string][]ast.SelectionSet) {
	applies := func(cond string) bool {
		if cond == "" || cond == concrete.Name {
			return true
		}
		return slices.Contains(schema.GetPossibleTypes(schema.Types[cond]), concrete)
	}
	for _, set := range sets {
		for _, sel := range set {
			switch s := sel.(type) {
			case *ast.Field:
				into[s.Name] = append(into[s.Name], s.SelectionSet)
			case *ast.InlineFragment:
				if applies(s.TypeCondition) {
					collect(schema, concrete, []ast.SelectionSet{s.SelectionSet}, into)
				}
			case *ast.FragmentSpread:
				if applies(s.Definition.TypeCondition) {
					collect(schema, concrete, []ast.SelectionSet{s.Definition.SelectionSet}, into)
				}
			}
		}
	}
}
