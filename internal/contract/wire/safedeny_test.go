package wire

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// SafeDenyTools is the list make generate-wire emits (the SafeDeny*
// constants): a constant it forgets, or a name it repeats, would make the
// plugin's declaration and this list differ.
func TestSafeDenyToolsListsEveryConstant(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "safedeny.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for i, n := range v.Names {
				if strings.HasPrefix(n.Name, "SafeDeny") {
					lit, err := strconv.Unquote(v.Values[i].(*ast.BasicLit).Value)
					if err != nil {
						t.Fatal(err)
					}
					consts = append(consts, lit)
				}
			}
		}
	}
	got := SafeDenyTools()
	if !slices.Equal(got, consts) {
		t.Fatalf("SafeDenyTools() = %v, the SafeDeny* constants are %v", got, consts)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(got)))) != len(got) {
		t.Fatalf("SafeDenyTools() repeats a name: %v", got)
	}
}
