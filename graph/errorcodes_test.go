package graph

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql/errcode"
)

// codeInSource finds the error codes the server's Go code gives: extensions' "code"
// values, code constants, and the codes of errors written before GraphQL runs.
var codeInSource = regexp.MustCompile(`(?:"code":\s*|\bcode\w*\s*=\s*|WriteError\([^"\n]*|codedError\()"([A-Z][A-Z_]+)"`)

// TestErrorCodesInStep: the ErrorCode enum of the schema, the README's table of error
// codes and the codes the server gives are the same set, and every code has a
// description in the schema.
func TestErrorCodesInStep(t *testing.T) {
	t.Parallel()
	enum := NewExecutableSchema(Config{}).Schema().Types["ErrorCode"]
	if enum == nil {
		t.Fatal("the schema has no ErrorCode enum")
	}
	inSchema := map[string]bool{}
	for _, v := range enum.EnumValues {
		inSchema[v.Name] = true
		if strings.TrimSpace(v.Description) == "" {
			t.Errorf("ErrorCode.%s has no description", v.Name)
		}
	}

	// The server's codes.
	given := map[string]string{errcode.ParseFailed: "gqlgen", errcode.ValidationFailed: "gqlgen", "PERSISTED_QUERY_NOT_FOUND": "gqlgen's APQ"}
	for _, c := range extensionCodes {
		given[c] = "graph/errors.go"
	}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "generated.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range codeInSource.FindAllStringSubmatch(string(b), -1) {
			given[m[1]] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for c, where := range given {
		if !inSchema[c] {
			t.Errorf("%s gives the code %s, which the ErrorCode enum lacks", where, c)
		}
	}
	if len(given) < 30 {
		t.Errorf("found %d codes in the source, want at least 30: is codeInSource still finding them?", len(given))
	}

	// The README's table: the backquoted codes of its first column.
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "**Error codes**")
	if !ok {
		t.Fatal(`README.md has no "**Error codes**" table`)
	}
	inREADME := map[string]bool{}
	rows := 0
	for _, line := range strings.Split(table, "\n")[1:] {
		if strings.TrimSpace(line) == "" && rows > 0 {
			break
		}
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		rows++
		first := strings.Split(line, "|")[1]
		for _, m := range regexp.MustCompile("`([A-Z_]+)`").FindAllStringSubmatch(first, -1) {
			inREADME[m[1]] = true
		}
	}
	for c := range inSchema {
		if !inREADME[c] {
			t.Errorf("ErrorCode.%s is not in README.md's table of error codes", c)
		}
	}
	for c := range inREADME {
		if !inSchema[c] {
			t.Errorf("README.md's table has %s, which the ErrorCode enum lacks", c)
		}
	}
}
