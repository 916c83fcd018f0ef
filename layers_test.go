package saccbook

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/saccbook/saccbook"

// rule is one row of docs/ARCHITECTURE.md's table "Who may import whom".
type rule struct {
	pkg   string   // a package, or a prefix ending in "/*"
	allow []string // packages or prefixes ending in "/*"
}

// covers reports whether pattern (a package or "prefix/*") names pkg.
func covers(pattern, pkg string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/*"); ok {
		return strings.HasPrefix(pkg, prefix+"/")
	}
	return pattern == pkg
}

// readRules parses the table from the architecture page, so the page is the rule.
func readRules(t *testing.T) []rule {
	t.Helper()
	b, err := os.ReadFile("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "### Who may import whom")
	if !ok {
		t.Fatal(`docs/ARCHITECTURE.md has no "### Who may import whom" section`)
	}
	row := regexp.MustCompile("^\\| `([^`]+)` \\| (.*) \\|$")
	name := regexp.MustCompile("`([^`]+)`")
	var rules []rule
	for _, line := range strings.Split(table, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			if strings.HasPrefix(line, "## ") {
				break
			}
			continue
		}
		r := rule{pkg: m[1]}
		for _, n := range name.FindAllStringSubmatch(m[2], -1) {
			r.allow = append(r.allow, n[1])
		}
		rules = append(rules, r)
	}
	if len(rules) < 10 {
		t.Fatalf("only %d rows read from the table in docs/ARCHITECTURE.md", len(rules))
	}
	return rules
}

// projectImports maps each package of both modules (by its path in the
// repository, "." for the root) to the project packages its non-test files import.
func projectImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != "." && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules" || n == "solutions") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if ignored(f) {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		imps := out[dir]
		for _, is := range f.Imports {
			ip, _ := strconv.Unquote(is.Path.Value)
			if ip == modulePath {
				ip = "."
			} else if rest, ok := strings.CutPrefix(ip, modulePath+"/"); ok {
				ip = rest
			} else {
				continue
			}
			if !slices.Contains(imps, ip) {
				imps = append(imps, ip)
			}
		}
		out[dir] = imps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ignored reports whether f is kept out of every build (//go:build ignore): a
// generator run with go run, not part of its directory's package.
func ignored(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() > f.Package {
			break
		}
		for _, c := range g.List {
			if strings.HasPrefix(c.Text, "//go:build ") && strings.Contains(c.Text, "ignore") {
				return true
			}
		}
	}
	return false
}

// TestLayers holds every package to its row of the table in docs/ARCHITECTURE.md.
func TestLayers(t *testing.T) {
	rules := readRules(t)
	pkgs := projectImports(t)
	for _, pkg := range slices.Sorted(maps.Keys(pkgs)) {
		var r *rule
		for i := range rules {
			if covers(rules[i].pkg, pkg) {
				r = &rules[i]
				break // the first row that covers a package decides
			}
		}
		if r == nil {
			t.Errorf("package %s has no row in docs/ARCHITECTURE.md's table of who may import whom: add one", pkg)
			continue
		}
		for _, imp := range pkgs[pkg] {
			if !slices.ContainsFunc(r.allow, func(a string) bool { return covers(a, imp) }) {
				t.Errorf("%s imports %s, which its row (%s) in docs/ARCHITECTURE.md does not allow", pkg, imp, r.pkg)
			}
		}
	}
	for _, r := range rules {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(pkgs)), func(p string) bool { return covers(r.pkg, p) }) {
			t.Errorf("docs/ARCHITECTURE.md has a row for %s, which is no package here", r.pkg)
		}
		if path.Clean(r.pkg) != r.pkg && !strings.HasSuffix(r.pkg, "/*") {
			t.Errorf("row %q: not a clean package path", r.pkg)
		}
	}
}
