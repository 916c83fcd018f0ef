package workbook

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/saccbook/saccbook/sacc/scenario"
)

func openBook(t *testing.T) *Book {
	t.Helper()
	root, err := FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Exercises) == 0 {
		t.Fatalf("no exercises under %s", root)
	}
	return b
}

// TestExercisesAreWellFormed checks what every exercise must have: its files as
// the learner sees them, as shipped and as solved; a solution directory holding
// exactly those files; formatting; links that lead somewhere; keyed hints that
// some test can trigger.
func TestExercisesAreWellFormed(t *testing.T) {
	b := openBook(t)
	ids := map[string]bool{}
	for _, ex := range b.Exercises {
		ids[ex.ID] = true
		t.Run(ex.ID, func(t *testing.T) {
			for _, f := range ex.Files {
				for _, p := range []string{b.WorkPath(ex, f), b.StubPath(ex, f), b.SolutionPath(ex, f)} {
					if _, err := os.Stat(p); err != nil {
						t.Error(err)
					}
				}
			}
			// solutions/ID mirrors the exercise: the learner's files, nothing else.
			entries, err := os.ReadDir(filepath.Join(b.Root, "solutions", ex.ID))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if !contains(ex.Files, e.Name()) {
					t.Errorf("solutions/%s/%s is not one of the files the learner edits (%v)", ex.ID, e.Name(), ex.Files)
				}
			}
			for _, v := range []Variant{Stub, Solution} {
				bad, err := b.Unformatted(ex, v)
				if err != nil {
					t.Error(err)
				}
				for _, f := range bad {
					t.Errorf("gofmt would change %s", f)
				}
			}
			checkLinks(t, b, ex)
			checkKeyedHints(t, b, ex)
			if started, err := b.Started(ex); err == nil && started {
				t.Logf("%s differs from the stub (a learner's work, or a stub to copy into .stub/); the proof uses .stub/", ex.ID)
			}
		})
	}
	dirs, _ := os.ReadDir(filepath.Join(b.Root, "solutions"))
	for _, d := range dirs {
		// The catalogues of mistakes and alternatives (catalogue_test.go) live
		// beside the solutions.
		if catalogue := filepath.Join("solutions", d.Name()); catalogue == filepath.FromSlash(MistakesDir) || catalogue == filepath.FromSlash(AlternativesDir) {
			continue
		}
		if d.IsDir() && !ids[d.Name()] {
			t.Errorf("solutions/%s has no exercise", d.Name())
		}
	}
}

// concatenation is the seam between two string literals joined with +.
var concatenation = regexp.MustCompile(`"\s*\+\s*"`)

var chapterURL = regexp.MustCompile(`^/chapters/([0-9]{2})-[a-z0-9-]+$`)

func checkLinks(t *testing.T, b *Book, ex *Exercise) {
	m := chapterURL.FindStringSubmatch(ex.ChapterURL)
	if m == nil || m[1] != ex.ID[:2] {
		t.Errorf("chapter_url %q: want /chapters/%s-slug", ex.ChapterURL, ex.ID[:2])
	} else if written, _ := filepath.Glob(filepath.Join(b.Root, "chapters", m[1]+"-*.md")); len(written) > 0 {
		slug := strings.TrimSuffix(filepath.Base(written[0]), ".md")
		if ex.ChapterURL != "/chapters/"+slug {
			t.Errorf("chapter_url %q, but the chapter is /chapters/%s", ex.ChapterURL, slug)
		}
	}
	f := strings.Fields(ex.Replay)
	if len(f) < 3 || f[0] != "saccbook" || (f[1] != "run" && f[1] != "monitor") {
		t.Errorf("replay %q: want \"saccbook run SCENARIO\" or \"saccbook monitor SCENARIO\"", ex.Replay)
	} else if _, ok := scenario.Find(f[2]); !ok {
		t.Errorf("replay %q: no scenario %q", ex.Replay, f[2])
	}
}

// checkKeyedHints makes sure each keyed hint can fire: its text must appear in
// the exercise's tests, in the helpers they share, or in the stub (whose
// placeholder error is a failure too). String literals joined with + count as
// one.
func checkKeyedHints(t *testing.T, b *Book, ex *Exercise) {
	var text strings.Builder
	tests, _ := filepath.Glob(filepath.Join(b.Dir(ex), "*_test.go"))
	if len(tests) == 0 {
		t.Errorf("%s has no tests", ex.ID)
	}
	shared, _ := filepath.Glob(filepath.Join(b.Root, "exercises", "internal", "*", "*.go"))
	paths := append(tests, shared...)
	for _, f := range ex.Files {
		paths = append(paths, b.StubPath(ex, f))
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Error(err)
			continue
		}
		text.Write(data)
	}
	joined := concatenation.ReplaceAllString(text.String(), "")
	for _, k := range ex.KeyedHints {
		if !strings.Contains(joined, k.Match) {
			t.Errorf("keyed hint %q can never fire: no test or stub prints it", k.Match)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestStubsFailAndSolutionsPass is the proof behind every exercise: its tests
// fail on the stub, in the tests and not by a build failure, and pass with the
// reference solution overlaid; both versions vet clean. Each variant is one go
// test over every exercise, which the go command runs in parallel.
func TestStubsFailAndSolutionsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on every exercise, twice")
	}
	b := openBook(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	stubs, err := b.Run(ctx, b.Exercises, Stub, nil)
	if err != nil {
		t.Fatal(err)
	}
	solved, err := b.Run(ctx, b.Exercises, Solution, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []Variant{Stub, Solution} {
		if err := b.Vet(ctx, b.Exercises, v); err != nil {
			t.Error(err)
		}
	}
	for _, ex := range b.Exercises {
		t.Run(ex.ID, func(t *testing.T) {
			stub, sol := stubs[ex.ID], solved[ex.ID]
			switch {
			case stub.NoTests:
				t.Errorf("the exercise has no tests")
			case stub.BuildFailed:
				t.Errorf("the stub does not build; it must compile and fail in its tests:\n%s", stub.BuildOutput)
			case stub.Passed:
				t.Errorf("the tests pass on the stub: they must fail until the learner does the work")
			case len(stub.Failed()) == 0:
				t.Errorf("the stub fails outside any test (a panic? a stub must return, not panic):\n%s", stub.Output)
			}
			if !sol.Passed {
				t.Errorf("the tests fail with the solution overlaid:\n%s", sol.Report())
			}
			var failing []string
			for _, f := range stub.Failed() {
				failing = append(failing, f.Name)
			}
			t.Logf("on the stub %d tests fail: %s", len(failing), strings.Join(failing, ", "))
		})
	}
	t.Logf("%d exercises, stub and solution, tested and vetted in %v", len(b.Exercises), time.Since(start).Round(time.Millisecond))
}

// TestRootPatternSkipsExercises keeps `go test ./...` at the root green on a
// learner's machine: the exercises and solutions are separate modules.
func TestRootPatternSkipsExercises(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	b := openBook(t)
	out, err := b.goCmd(context.Background(), "list", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "/exercises") || strings.Contains(line, "/solutions") {
			t.Errorf("go test ./... at the root would include %s", line)
		}
	}
}
