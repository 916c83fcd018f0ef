package workbook

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// book is a tiny workbook in a temporary directory: one exercise with a stub,
// a working copy and a solution.
func book(t *testing.T, meta string) *Book {
	t.Helper()
	root := t.TempDir()
	write(t, filepath.Join(root, "go.work"), "go 1.26\n")
	dir := filepath.Join(root, "exercises", "03-ring-bell")
	write(t, filepath.Join(dir, "meta.json"), meta)
	write(t, filepath.Join(dir, "exercise.go"), "package ringbell\n")
	write(t, filepath.Join(dir, ".stub", "exercise.go"), "package ringbell\n")
	write(t, filepath.Join(root, "solutions", "03-ring-bell", "exercise.go"), "package ringbell\n\nfunc Ring() {}\n")
	b, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

const goodMeta = `{"id": "03-ring-bell", "title": "Ring the bell", "chapter": 3, "order": 1,
	"chapter_url": "/chapters/03-the-doorbell-page", "replay": "saccbook run job", "files": ["exercise.go"],
	"hints": ["one", "two", "three"], "keyed_hints": [{"match": "SQ_TAIL", "hint": "the tail"}]}`

func TestFindRootWalksUp(t *testing.T) {
	b := book(t, goodMeta)
	got, err := FindRoot(filepath.Join(b.Root, "exercises", "03-ring-bell"))
	if err != nil || got != b.Root {
		t.Errorf("FindRoot = %q, %v; want %q", got, err, b.Root)
	}
	if _, err := FindRoot(t.TempDir()); err == nil {
		// A temporary directory may sit under a workspace on some machines; only
		// a root-level search can be sure, so accept either answer there.
		t.Log("a go.work exists above the temporary directory")
	}
}

func TestOpenRejectsBadMetadata(t *testing.T) {
	for name, tc := range map[string]struct{ edit, want string }{
		"id differs from directory": {`"id": "03-ring-bell"`, `differs from the directory`},
		"two hints":                 {`"hints": ["one", "two", "three"]`, `2 hints`},
		"chapter disagrees with id": {`"chapter": 3`, `chapter 4`},
		"negative order":            {`"order": 1`, `"order" is`},
		"test file as learner file": {`"files": ["exercise.go"]`, `non-test .go file`},
		"unknown field":             {`"title"`, `unknown field`},
	} {
		t.Run(name, func(t *testing.T) {
			replacement := map[string]string{
				"id differs from directory": `"id": "03-ring-the-bell"`,
				"two hints":                 `"hints": ["one", "two"]`,
				"chapter disagrees with id": `"chapter": 4`,
				"negative order":            `"order": -1`,
				"test file as learner file": `"files": ["x_test.go"]`,
				"unknown field":             `"titel"`,
			}[name]
			root := t.TempDir()
			write(t, filepath.Join(root, "exercises", "03-ring-bell", "meta.json"), strings.Replace(goodMeta, tc.edit, replacement, 1))
			_, err := Open(root)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open: %v; want an error about %q", err, tc.want)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	b := book(t, goodMeta)
	for _, id := range []string{"03-ring-bell", "03-ring", "03"} {
		if ex, err := b.Lookup(id); err != nil || ex.ID != "03-ring-bell" {
			t.Errorf("Lookup(%q) = %v, %v", id, ex, err)
		}
	}
	if _, err := b.Lookup("04-nothing"); err == nil || !strings.Contains(err.Error(), `no exercise "04-nothing"`) {
		t.Errorf("Lookup of an unknown ID: %v", err)
	}
	b.Exercises = append(b.Exercises, &Exercise{ID: "03-ring-twice"})
	if _, err := b.Lookup("03-ring"); err == nil || !strings.Contains(err.Error(), "could be any of") {
		t.Errorf("Lookup of an ambiguous prefix: %v", err)
	}
}

func TestStatusFollowsTheFilesAndTheRecord(t *testing.T) {
	b := book(t, goodMeta)
	ex := b.Exercises[0]
	p, err := LoadProgress(b.Root)
	if err != nil {
		t.Fatal(err)
	}
	status := func() Status {
		s, err := b.Status(ex, p)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := status(); s != NotStarted {
		t.Errorf("untouched: %s", s)
	}
	write(t, b.WorkPath(ex, "exercise.go"), "package ringbell\n\nfunc Ring() { /* mine */ }\n")
	if s := status(); s != Started {
		t.Errorf("edited, never checked: %s", s)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const out = "    ring_test.go:12: \n        SQ_TAIL was never written\n"
	p.Record(ex, &Result{Output: out, Tests: []TestResult{{Name: "TestRing", Action: "fail", Output: out}}}, now)
	if s := status(); s != Failing {
		t.Errorf("after a failing check: %s", s)
	}
	e := p.Exercises[ex.ID]
	if !reflect.DeepEqual(e.KeyedHints, []int{0}) || e.Summary != "TestRing: SQ_TAIL was never written" || e.Verdict != "1 of 1 test fails: TestRing" {
		t.Errorf("record of the failure: %+v", e)
	}
	p.Record(ex, &Result{Passed: true}, now)
	if err := p.Save(b.Root); err != nil {
		t.Fatal(err)
	}
	if p, err = LoadProgress(b.Root); err != nil {
		t.Fatal(err)
	}
	if s := status(); s != Done || p.Exercises[ex.ID].Solved != "2026-01-02T03:04:05Z" {
		t.Errorf("after a passing check and a reload: %s, %+v", s, p.Exercises[ex.ID])
	}
}

func TestParseTestJSON(t *testing.T) {
	ex := &Exercise{ID: "03-ring-bell"}
	pkg := ex.ImportPath()
	lines := []string{
		`{"Action":"start","Package":"` + pkg + `"}`,
		`{"Action":"run","Package":"` + pkg + `","Test":"TestRing"}`,
		`{"Action":"output","Package":"` + pkg + `","Test":"TestRing","Output":"=== RUN   TestRing\n"}`,
		`{"Action":"run","Package":"` + pkg + `","Test":"TestRing/twice"}`,
		`{"Action":"output","Package":"` + pkg + `","Test":"TestRing/twice","Output":"    ring_test.go:40: \n"}`,
		`{"Action":"output","Package":"` + pkg + `","Test":"TestRing/twice","Output":"        the doorbell rang once\n"}`,
		`{"Action":"output","Package":"` + pkg + `","Test":"TestRing/twice","Output":"    --- FAIL: TestRing/twice (0.00s)\n"}`,
		`{"Action":"fail","Package":"` + pkg + `","Test":"TestRing/twice"}`,
		`{"Action":"fail","Package":"` + pkg + `","Test":"TestRing"}`,
		`{"Action":"run","Package":"` + pkg + `","Test":"TestQuiet"}`,
		`{"Action":"pass","Package":"` + pkg + `","Test":"TestQuiet"}`,
		`not json at all`,
		`{"Action":"fail","Package":"` + pkg + `","Elapsed":0.25}`,
	}
	var seen []string
	p := newParser([]*Exercise{ex}, Working, func(e *Exercise, r *Result) {
		seen = append(seen, map[bool]string{true: "start", false: "end"}[r == nil])
	})
	for _, l := range lines {
		p.line([]byte(l))
	}
	r := p.results[ex.ID]
	if r.Passed || r.BuildFailed || r.Elapsed != 250*time.Millisecond {
		t.Errorf("result: passed %v, build failed %v, elapsed %v", r.Passed, r.BuildFailed, r.Elapsed)
	}
	if f := r.Failed(); len(f) != 1 || f[0].Name != "TestRing/twice" {
		t.Errorf("Failed() = %+v; want only the failing leaf", f)
	}
	if got := r.Summary(); got != "TestRing/twice: the doorbell rang once" {
		t.Errorf("Summary() = %q", got)
	}
	if rep := r.Report(); strings.Contains(rep, "=== RUN") || strings.Contains(rep, "--- FAIL") || !strings.Contains(rep, "the doorbell rang once") {
		t.Errorf("Report() = %q", rep)
	}
	if !reflect.DeepEqual(seen, []string{"start", "end"}) {
		t.Errorf("progress calls: %v", seen)
	}
}

func TestParseBuildFailure(t *testing.T) {
	ex := &Exercise{ID: "03-ring-bell"}
	pkg := ex.ImportPath()
	p := newParser([]*Exercise{ex}, Stub, nil)
	for _, l := range []string{
		`{"ImportPath":"` + pkg + ` [` + pkg + `.test]","Action":"build-output","Output":"# ` + pkg + `\n"}`,
		`{"ImportPath":"` + pkg + ` [` + pkg + `.test]","Action":"build-output","Output":"./exercise.go:7:2: undefined: sacc\n"}`,
		`{"ImportPath":"` + pkg + ` [` + pkg + `.test]","Action":"build-fail"}`,
		`{"Action":"start","Package":"` + pkg + `"}`,
		`{"Action":"fail","Package":"` + pkg + `","FailedBuild":"` + pkg + ` [` + pkg + `.test]"}`,
	} {
		p.line([]byte(l))
	}
	r := p.results[ex.ID]
	if !r.BuildFailed || r.Passed {
		t.Fatalf("build failure not seen: %+v", r)
	}
	if got := r.Summary(); got != "does not compile: ./exercise.go:7:2: undefined: sacc" {
		t.Errorf("Summary() = %q", got)
	}
}

func TestIsFileLine(t *testing.T) {
	for s, want := range map[string]bool{
		"sizebar_test.go:98:":     true,
		"x.go:1":                  true,
		"see exercise.go:12: now": false,
		"SizeBAR(BAR0) = 0x1ff8":  false,
		"a.go:b:":                 false,
	} {
		if got := isFileLine(s); got != want {
			t.Errorf("isFileLine(%q) = %v", s, got)
		}
	}
}

func TestUnformatted(t *testing.T) {
	b := book(t, goodMeta)
	ex := b.Exercises[0]
	write(t, b.SolutionPath(ex, "exercise.go"), "package ringbell\nfunc Ring(){}\n")
	bad, err := b.Unformatted(ex, Solution)
	if err != nil || len(bad) != 1 {
		t.Errorf("Unformatted(solution) = %v, %v; want the solution", bad, err)
	}
	if bad, err := b.Unformatted(ex, Stub); err != nil || len(bad) != 0 {
		t.Errorf("Unformatted(stub) = %v, %v", bad, err)
	}
}

// TestVerdictCountsTests checks the sentence check prints: tests counted as go
// test reported them, a parent counted through its subtests unless it failed on
// its own, a build failure never said as a count, a cut-short run said as such.
func TestVerdictCountsTests(t *testing.T) {
	tests := func(spec ...string) []TestResult {
		var out []TestResult
		for _, s := range spec {
			name, action, _ := strings.Cut(s, " ")
			out = append(out, TestResult{Name: name, Action: action})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		r    Result
		want string
		n    Tally
	}{
		{"all pass", Result{Passed: true, Tests: tests("TestA pass", "TestB pass", "TestB/x pass", "TestB/y pass")},
			"all 3 tests pass", Tally{Ran: 3}},
		{"one test", Result{Passed: true, Tests: tests("TestA pass")}, "the 1 test passes", Tally{Ran: 1}},
		{"some fail", Result{Tests: tests("TestA pass", "TestB fail", "TestC fail", "TestC/one pass", "TestC/two fail",
			"TestD pass", "TestE fail", "TestF skip")},
			"3 of 7 tests fail (1 skipped): TestB, TestC/two, TestE", Tally{Ran: 7, Failed: 3, Skipped: 1}},
		{"one fails", Result{Tests: tests("TestA pass", "TestB fail")}, "1 of 2 tests fails: TestB", Tally{Ran: 2, Failed: 1}},
		// TestC's own check failed after its subtests passed: TestC is the failing test.
		{"parent fails on its own", Result{Tests: tests("TestC fail", "TestC/one pass", "TestC/two pass")},
			"1 of 3 tests fails: TestC", Tally{Ran: 3, Failed: 1}},
		{"many fail", Result{Tests: tests("T1 fail", "T2 fail", "T3 fail", "T4 fail", "T5 fail", "T6 fail", "T7 fail")},
			"7 of 7 tests fail: T1, T2, T3, T4, T5, and 2 more", Tally{Ran: 7, Failed: 7}},
		{"build failure", Result{BuildFailed: true, BuildOutput: "# pkg\n./exercise.go:3:1: syntax error\n"},
			"does not compile, so no test ran", Tally{}},
		{"vet failure", Result{BuildFailed: true, BuildOutput: "# pkg\n# [pkg]\n./exercise.go:9:2: fmt.Printf format %d has arg \"x\" of wrong type string\n"},
			"go vet refused it, so no test ran", Tally{}},
		{"panic", Result{Panic: "panic: assignment to entry in nil map", PanicTest: "TestB",
			Tests: tests("TestA pass", "TestB fail")},
			`TestB stopped with "panic: assignment to entry in nil map", so the tests after it did not run; 1 of 2 tests fails: TestB`,
			Tally{Ran: 2, Failed: 1}},
		{"timeout", Result{Panic: "panic: test timed out after 2m0s", Tests: tests("TestA pass", "TestB")},
			`the test binary stopped with "panic: test timed out after 2m0s", so the tests after it did not run; 1 of 2 tests fails: TestB`,
			Tally{Ran: 2, Failed: 1}},
		{"outside any test", Result{Tests: tests("TestA pass")},
			"go test failed outside any test, though 1 of 1 test passed", Tally{Ran: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Verdict(); got != tc.want {
				t.Errorf("Verdict() = %q\nwant        %q", got, tc.want)
			}
			if got := tc.r.Tally(); got != tc.n {
				t.Errorf("Tally() = %+v, want %+v", got, tc.n)
			}
		})
	}
}

func TestParseNotesAPanic(t *testing.T) {
	ex := &Exercise{ID: "03-ring-bell"}
	pkg := ex.ImportPath()
	p := newParser([]*Exercise{ex}, Working, nil)
	for _, l := range []string{
		`{"Action":"run","Package":"` + pkg + `","Test":"TestRing"}`,
		`{"Action":"output","Package":"` + pkg + `","Test":"TestRing","Output":"panic: runtime error: index out of range [8] with length 8 [recovered]\n"}`,
		`{"Action":"output","Package":"` + pkg + `","Test":"TestRing","Output":"panic: again\n"}`,
		`{"Action":"fail","Package":"` + pkg + `","Test":"TestRing"}`,
		`{"Action":"fail","Package":"` + pkg + `","Elapsed":0.01}`,
	} {
		p.line([]byte(l))
	}
	r := p.results[ex.ID]
	if r.Panic != "panic: runtime error: index out of range [8] with length 8 [recovered]" || r.PanicTest != "TestRing" {
		t.Errorf("panic %q in %q", r.Panic, r.PanicTest)
	}
}
