package workbook

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	goparser "go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

// Linking a test binary costs more than compiling and running an exercise's
// tests, so the trials of one exercise share one binary: each trial's files go
// into one package, every name they declare at package level suffixed with
// the trial's tag (Submit becomes Submit_t3, TestWraps TestWraps_t3), so that
// the trials cannot see each other. A package that does not build this way, or
// whose tests stop outside any test, is run again one trial per package, so a
// trial's result never depends on the others'.

// mergeTag is the suffix of trial i's names.
func mergeTag(i int) string { return fmt.Sprintf("_t%d", i) }

// writeMerged fills dir with the trials of one exercise, renamed, and a copy of
// the exercise's other files (meta.json). The trials are tagged by their index.
// It returns the names of the exercise's top-level tests, which every trial
// must have run for its result to count.
func (b *Book) writeMerged(ex *Exercise, trials []Trial, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(b.Dir(ex))
	if err != nil {
		return nil, err
	}
	var tests []string
	for _, e := range entries {
		switch name := e.Name(); {
		case e.IsDir() || listed(ex.Files, name):
		case strings.HasSuffix(name, "_test.go"):
			tests = append(tests, filepath.Join(b.Dir(ex), name))
		case strings.HasSuffix(name, ".go"):
			return nil, fmt.Errorf("%s: a Go file the learner does not edit", name) // it would be declared once per trial
		default:
			if err := copyFile(filepath.Join(b.Dir(ex), name), filepath.Join(dir, name)); err != nil {
				return nil, err
			}
		}
	}
	var names []string
	fset := token.NewFileSet()
	for _, f := range tests {
		af, err := goparser.ParseFile(fset, f, nil, goparser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") {
				names = append(names, fd.Name.Name)
			}
		}
	}
	for i, tr := range trials {
		var files []string
		for _, f := range ex.Files {
			files = append(files, tr.Files[f])
		}
		files = append(files, tests...)
		if err := renameInto(files, mergeTag(i), dir); err != nil {
			return nil, fmt.Errorf("%s: %w", tr.Key(), err)
		}
	}
	return names, nil
}

// renameInto parses files as one package, suffixes every package-level name
// with tag, and writes them to dir as tag-prefixed files.
func renameInto(files []string, tag, dir string) error {
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, f := range files {
		af, err := goparser.ParseFile(fset, f, nil, goparser.ParseComments|goparser.SkipObjectResolution)
		if err != nil {
			return err
		}
		parsed = append(parsed, af)
	}
	pkg := newPackageNames(parsed)
	for _, af := range parsed {
		pkg.rename(af, tag)
	}
	for i, af := range parsed {
		var buf bytes.Buffer
		if err := format.Node(&buf, fset, af); err != nil {
			return err
		}
		name := strings.TrimPrefix(tag, "_") + "_" + filepath.Base(files[i])
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// packageNames is what renaming needs to know about a package, from its syntax
// alone: the names it declares, its types, and the local types it embeds.
type packageNames struct {
	declared map[string]bool
	types    map[string]ast.Expr // a declared type's definition
	embedded map[string]bool     // declared types embedded in a struct: their field has their name
}

func newPackageNames(files []*ast.File) *packageNames {
	p := &packageNames{declared: map[string]bool{}, types: map[string]ast.Expr{}, embedded: map[string]bool{}}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.Name != "init" && d.Name.Name != "_" {
					p.declared[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						p.declared[s.Name.Name] = true
						p.types[s.Name.Name] = s.Type
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.Name != "_" {
								p.declared[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if st, ok := n.(*ast.StructType); ok {
				for _, fld := range st.Fields.List {
					if len(fld.Names) == 0 {
						if id := baseIdent(fld.Type); id != nil && p.declared[id.Name] {
							p.embedded[id.Name] = true
						}
					}
				}
			}
			return true
		})
	}
	return p
}

// baseIdent is the type name of an embedded field: T or *T.
func baseIdent(e ast.Expr) *ast.Ident {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	id, _ := e.(*ast.Ident)
	return id
}

// rename suffixes every use of a package-level name in f. Names that are not
// package-level uses are left alone: selected fields and methods (except the
// field an embedded local type gives its name to), method names, the fields of
// struct and interface types, and the keys of struct literals.
func (p *packageNames) rename(f *ast.File, tag string) {
	skip := map[*ast.Ident]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if !p.embedded[n.Sel.Name] {
				skip[n.Sel] = true
			}
		case *ast.FuncDecl:
			if n.Recv != nil {
				skip[n.Name] = true
			}
		case *ast.StructType:
			for _, fld := range n.Fields.List {
				for _, name := range fld.Names {
					skip[name] = true
				}
			}
		case *ast.InterfaceType:
			for _, m := range n.Methods.List {
				for _, name := range m.Names {
					skip[name] = true
				}
			}
		case *ast.CompositeLit:
			p.markKeys(n, nil, skip)
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && !skip[id] && p.declared[id.Name] {
			id.Name += tag
		}
		return true
	})
}

// markKeys marks the keys of lit, and of the literals nested in it whose type
// is elided, that name struct fields. elided is lit's type when lit leaves it
// out.
func (p *packageNames) markKeys(lit *ast.CompositeLit, elided ast.Expr, skip map[*ast.Ident]bool) {
	typ := lit.Type
	if typ == nil {
		typ = elided
	}
	under := p.underlying(typ)
	var elem, key ast.Expr
	isStruct := false
	switch t := under.(type) {
	case *ast.ArrayType:
		elem = t.Elt
	case *ast.MapType:
		elem, key = t.Value, t.Key
	case *ast.StructType, *ast.SelectorExpr:
		// A struct, or a type of another package: a struct, as far as the
		// exercises' literals go.
		isStruct = true
	}
	for _, e := range lit.Elts {
		v := e
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && isStruct {
				skip[id] = true
			}
			if inner, ok := kv.Key.(*ast.CompositeLit); ok && inner.Type == nil {
				p.markKeys(inner, key, skip)
			}
			v = kv.Value
		}
		if u, ok := v.(*ast.UnaryExpr); ok && u.Op == token.AND {
			v = u.X
		}
		if inner, ok := v.(*ast.CompositeLit); ok && inner.Type == nil {
			e := elem
			if s, ok := e.(*ast.StarExpr); ok {
				e = s.X
			}
			p.markKeys(inner, e, skip)
		}
	}
}

// underlying follows local type names to their definitions.
func (p *packageNames) underlying(e ast.Expr) ast.Expr {
	for range 10 {
		id, ok := e.(*ast.Ident)
		if !ok {
			return e
		}
		def, ok := p.types[id.Name]
		if !ok {
			return e
		}
		e = def
	}
	return e
}

// splitMerged is the result of trial i of a merged package: its tests, under
// their own names. complete is false unless every one of tests ran to an end:
// a panic that stops the binary stops the trials after it too.
func splitMerged(r *Result, i int, tests []string) (_ *Result, complete bool) {
	tag := mergeTag(i)
	out := &Result{ID: r.ID, Variant: r.Variant, Elapsed: r.Elapsed}
	failed := false
	for _, t := range r.Tests {
		top, sub, _ := strings.Cut(t.Name, "/")
		name, ok := strings.CutSuffix(top, tag)
		if !ok {
			continue
		}
		if sub != "" {
			name += "/" + sub
		}
		failed = failed || t.Action == "fail"
		out.Tests = append(out.Tests, TestResult{Name: name, Action: t.Action, Output: t.Output})
		out.Output += t.Output
	}
	out.Passed = !failed && len(out.Tests) > 0
	out.NoTests = len(out.Tests) == 0
	ended := map[string]bool{}
	for _, t := range out.Tests {
		if t.Action != "" {
			ended[t.Name] = true
		}
	}
	for _, t := range out.Tests {
		if t.Action == "" {
			return out, false // still running when the binary stopped
		}
	}
	for _, name := range tests {
		if !ended[name] {
			return out, false
		}
	}
	return out, true
}
