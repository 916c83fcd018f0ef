package workbook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenameSuffixesPackageNamesOnly: the names a package declares are
// suffixed wherever they are used as such, and nothing else: not fields,
// methods, struct literal keys or other packages' names.
func TestRenameSuffixesPackageNamesOnly(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import "strings"

type Kind int

const (
	Good Kind = iota
	Bad
)

var names = map[Kind]string{Good: "good", Bad: "bad"}

type Queue struct {
	Size  int
	Good  bool
	inner Inner
}

type Inner interface{ Size() int }

type wrapped struct{ Inner }

func (q *Queue) Len() int { return q.Size + len(names) }

func New(size int) *Queue {
	return &Queue{Size: size, Good: true}
}

func use(w wrapped) int { return w.Inner.Size() + len(strings.Fields("a")) }

var table = []struct{ Size int }{{Size: 1}}
`
	test := `package p

import "testing"

func TestNew(t *testing.T) {
	if q := New(3); q.Size != 3 || names[Good] != "good" {
		t.Fatal(q)
	}
}
`
	for name, text := range map[string]string{"exercise.go": src, "p_test.go": test} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	if err := renameInto([]string{filepath.Join(dir, "exercise.go"), filepath.Join(dir, "p_test.go")}, "_t7", out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(out, "t7_exercise.go"))
	if err != nil {
		t.Fatal(err)
	}
	gotTest, err := os.ReadFile(filepath.Join(out, "t7_p_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"map[Kind_t7]string{Good_t7: \"good\", Bad_t7: \"bad\"}", // map keys are uses of constants
		"Size  int\n", "Good  bool\n", // fields keep their names
		"func (q *Queue_t7) Len() int { return q.Size + len(names_t7) }", // methods and selectors too
		"&Queue_t7{Size: size, Good: true}",                              // struct keys are fields
		"type wrapped_t7 struct{ Inner_t7 }", "w.Inner_t7.Size()",        // an embedded type names its field
		"strings.Fields", "[]struct{ Size int }{{Size: 1}}",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("renamed file lacks %q:\n%s", want, got)
		}
	}
	if !strings.Contains(string(gotTest), "func TestNew_t7(t *testing.T)") || !strings.Contains(string(gotTest), "New_t7(3)") {
		t.Errorf("renamed test:\n%s", gotTest)
	}
}
