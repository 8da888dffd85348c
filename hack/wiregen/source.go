package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// source is what the generator reads from a package's Go files besides its
// types: doc comments and string constants. Reflection sees neither.
type source struct {
	// comments are keyed "pkgpath.Type", "pkgpath.Type.Field" and
	// "pkgpath.Const".
	comments map[string]string
	// consts are the string constants in file and declaration order.
	consts []constant
}

type constant struct {
	pkg, name string
	// typ is the declared type's name; empty for an untyped constant.
	typ   string
	value string
	doc   string
}

// read adds the non-test Go files of dir, the package pkgPath, to s.
func (s *source) read(dir, pkgPath string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok {
				s.decl(g, pkgPath)
			}
		}
	}
	return nil
}

func (s *source) decl(g *ast.GenDecl, pkg string) {
	for _, spec := range g.Specs {
		doc := docText(specDoc(g, spec))
		switch sp := spec.(type) {
		case *ast.TypeSpec:
			s.comments[pkg+"."+sp.Name.Name] = doc
			st, ok := sp.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, f := range st.Fields.List {
				for _, n := range f.Names {
					s.comments[pkg+"."+sp.Name.Name+"."+n.Name] = docText(f.Doc)
				}
			}
		case *ast.ValueSpec:
			if g.Tok != token.CONST {
				continue
			}
			typ := ""
			if id, ok := sp.Type.(*ast.Ident); ok {
				typ = id.Name
			}
			for i, n := range sp.Names {
				s.comments[pkg+"."+n.Name] = doc
				if i >= len(sp.Values) {
					continue
				}
				lit, ok := sp.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					continue
				}
				s.consts = append(s.consts, constant{pkg: pkg, name: n.Name, typ: typ, value: v, doc: doc})
			}
		}
	}
}

// specDoc is a spec's own comment, or its declaration's when it stands
// alone (`type X struct` carries the comment on the declaration).
func specDoc(g *ast.GenDecl, spec ast.Spec) *ast.CommentGroup {
	switch sp := spec.(type) {
	case *ast.TypeSpec:
		if sp.Doc != nil {
			return sp.Doc
		}
	case *ast.ValueSpec:
		if sp.Doc != nil {
			return sp.Doc
		}
	}
	if len(g.Specs) == 1 {
		return g.Doc
	}
	return nil
}

// docText is a comment's text without kubebuilder markers (`+optional`).
func docText(c *ast.CommentGroup) string {
	if c == nil {
		return ""
	}
	var keep []string
	for _, l := range strings.Split(c.Text(), "\n") {
		if !strings.HasPrefix(l, "+") {
			keep = append(keep, l)
		}
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}

// typed returns the values of the constants of pkg's named type typ.
func (s *source) typed(pkg, typ string) []constant {
	var out []constant
	for _, c := range s.consts {
		if c.pkg == pkg && c.typ == typ {
			out = append(out, c)
		}
	}
	return out
}

// untyped returns pkg's untyped constants whose name starts with prefix.
func (s *source) untyped(pkg, prefix string) []constant {
	var out []constant
	for _, c := range s.consts {
		if c.pkg == pkg && c.typ == "" && strings.HasPrefix(c.name, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// untypedSuffix returns pkg's untyped constants whose name ends with suffix.
func (s *source) untypedSuffix(pkg, suffix string) []constant {
	var out []constant
	for _, c := range s.consts {
		if c.pkg == pkg && c.typ == "" && strings.HasSuffix(c.name, suffix) {
			out = append(out, c)
		}
	}
	return out
}

// summary is a constant's doc without its leading "Name:" or "Name", in
// one line and without the final period.
func (c constant) summary() string {
	d := strings.Join(strings.Fields(c.doc), " ")
	d = strings.TrimPrefix(strings.TrimPrefix(d, c.name+":"), c.name+" ")
	return strings.TrimSuffix(strings.TrimSpace(d), ".")
}

func readSources(root string) (*source, error) {
	s := &source{comments: map[string]string{}}
	for _, p := range []struct{ dir, pkg string }{{"internal/contract/wire", wirePkg}, {"api/v1alpha1", apiPkg}} {
		if err := s.read(filepath.Join(root, p.dir), p.pkg); err != nil {
			return nil, fmt.Errorf("read %s: %w", p.dir, err)
		}
	}
	return s, nil
}
