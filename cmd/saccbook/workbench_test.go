package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saccbook/saccbook/internal/syncbuf"
	"github.com/saccbook/saccbook/workbook"
)

// The exercises the progress-command tests copy: two, from one chapter, so the
// tests depend on nothing else in the tree.
var copied = []string{"01-find-device", "01-size-bar"}

// copyWorkbook makes a workspace in a temporary directory: a go.work that uses
// this repository's root module and the copy's exercises, with the shared test
// helpers, the copied exercises and their solutions.
func copyWorkbook(t testing.TB) string {
	t.Helper()
	src, err := workbook.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	work := "go 1.26.0\n\nuse (\n\t" + src + "\n\t./exercises\n)\n"
	writeFile(t, filepath.Join(dst, "go.work"), work)
	if sum, err := os.ReadFile(filepath.Join(src, "go.work.sum")); err == nil {
		writeFile(t, filepath.Join(dst, "go.work.sum"), string(sum))
	}
	copyTree(t, filepath.Join(src, "exercises", "go.mod"), filepath.Join(dst, "exercises", "go.mod"))
	copyTree(t, filepath.Join(src, "exercises", "internal"), filepath.Join(dst, "exercises", "internal"))
	copyTree(t, filepath.Join(src, "solutions", "go.mod"), filepath.Join(dst, "solutions", "go.mod"))
	for _, id := range copied {
		copyTree(t, filepath.Join(src, "exercises", id), filepath.Join(dst, "exercises", id))
		copyTree(t, filepath.Join(src, "solutions", id), filepath.Join(dst, "solutions", id))
		// The copy starts as shipped, whatever this tree's working copy holds.
		copyTree(t, filepath.Join(src, "exercises", id, ".stub"), filepath.Join(dst, "exercises", id))
	}
	return dst
}

func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// fakeRunner stands in for go test: an exercise passes when its file is the
// reference solution, and otherwise fails with a message that one of its keyed
// hints matches.
type fakeRunner struct {
	root string
	mu   sync.Mutex
	runs []string
	ran  chan string
}

func (f *fakeRunner) run(ctx context.Context, exs []*workbook.Exercise, v workbook.Variant, progress func(*workbook.Exercise, *workbook.Result)) (map[string]*workbook.Result, error) {
	out := map[string]*workbook.Result{}
	for _, ex := range exs {
		if progress != nil {
			progress(ex, nil)
		}
		work, _ := os.ReadFile(filepath.Join(f.root, "exercises", ex.ID, "exercise.go"))
		sol, _ := os.ReadFile(filepath.Join(f.root, "solutions", ex.ID, "exercise.go"))
		r := &workbook.Result{ID: ex.ID, Variant: v, Passed: bytes.Equal(work, sol)}
		if !r.Passed {
			msg := "    x_test.go:1: \n        the address the firmware assigned was lost\n"
			r.Tests = []workbook.TestResult{{Name: "TestRestoresTheBAR", Action: "fail", Output: msg}}
			r.Output = msg
		} else {
			r.Tests = []workbook.TestResult{{Name: "TestRestoresTheBAR", Action: "pass"}}
		}
		out[ex.ID] = r
		if progress != nil {
			progress(ex, r)
		}
		f.mu.Lock()
		f.runs = append(f.runs, ex.ID)
		f.mu.Unlock()
		if f.ran != nil {
			select {
			case f.ran <- ex.ID:
			case <-ctx.Done():
			}
		}
	}
	return out, nil
}

// testBench opens the copy with the fake runner and a fixed clock.
func testBench(t *testing.T, root, stdin string) (*bench, *fakeRunner, *syncbuf.Buffer) {
	t.Helper()
	var out syncbuf.Buffer
	w, err := openBench(root, &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRunner{root: root}
	w.run = f.run
	w.now = func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }
	w.poll = 5 * time.Millisecond
	return w, f, &out
}

func progressOf(t *testing.T, root string) *workbook.Progress {
	t.Helper()
	p, err := workbook.LoadProgress(root)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wantLines checks that out holds each of want, counting any run of spaces as
// one (tables pad their columns).
func wantLines(t *testing.T, out string, want ...string) {
	t.Helper()
	squeeze := func(s string) string { return spaces.ReplaceAllString(s, " ") }
	for _, w := range want {
		if !strings.Contains(squeeze(out), squeeze(w)) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

var spaces = regexp.MustCompile(` +`)

func TestListShowsChaptersAndStatus(t *testing.T) {
	root := copyWorkbook(t)
	w, _, out := testBench(t, root, "")
	if err := w.list(); err != nil {
		t.Fatal(err)
	}
	wantLines(t, out.String(), "01 Finding the device", "01-find-device  not started  Find the device on bus 0",
		"01-size-bar     not started  Size a BAR", "0 of 2 done.", "next: 01-find-device")
	writeFile(t, filepath.Join(root, "exercises", "01-find-device", "exercise.go"), "package finddevice // mine\n")
	out.Reset()
	if err := w.list(); err != nil {
		t.Fatal(err)
	}
	wantLines(t, out.String(), "01-find-device  started", "run saccbook check 01-find-device")
}

func TestCheckRunsStartedExercisesAndRecords(t *testing.T) {
	root := copyWorkbook(t)
	copyTree(t, filepath.Join(root, "solutions", "01-find-device"), filepath.Join(root, "exercises", "01-find-device"))
	w, f, out := testBench(t, root, "")
	if err := w.check(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if len(f.runs) != 1 || f.runs[0] != "01-find-device" {
		t.Errorf("ran %v; want only the started exercise", f.runs)
	}
	wantLines(t, out.String(), "01-find-device    done", "01-size-bar       not started", "1 of 2 done.", "next: 01-size-bar")
	p := progressOf(t, root)
	if e := p.Exercises["01-find-device"]; e == nil || e.Status != workbook.Done || e.Solved != "2026-03-04T05:06:07Z" {
		t.Errorf("progress record: %+v", e)
	}

	// Start the second one, wrongly: check shows the failure and the way on.
	writeFile(t, filepath.Join(root, "exercises", "01-size-bar", "exercise.go"), "package sizebar // not yet\n")
	out.Reset()
	if err := w.check(context.Background(), "01-size"); err != exitStatus(1) {
		t.Fatalf("check of a failing exercise: %v, want exit status 1", err)
	}
	wantLines(t, out.String(), "--- TestRestoresTheBAR", "the address the firmware assigned was lost",
		"01-size-bar: 1 of 1 test fails: TestRestoresTheBAR.", "There is a hint for this failure: saccbook hint 01-size-bar",
		"01-size-bar       failing", "next: 01-size-bar, TestRestoresTheBAR: the address the firmware assigned was lost")
	e := progressOf(t, root).Exercises["01-size-bar"]
	if e.Status != workbook.Failing || len(e.KeyedHints) == 0 || e.Failing[0] != "TestRestoresTheBAR" {
		t.Errorf("progress record: %+v", e)
	}
}

func TestCheckUnknownExercise(t *testing.T) {
	root := copyWorkbook(t)
	code, _, errOut := runCLI(t, "", "check", "99-nothing", "--root", root)
	if code != 1 || !strings.Contains(errOut, `no exercise "99-nothing"`) {
		t.Errorf("code %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "hint", "01-size-bar", "7", "--root", root)
	if code != 2 || !strings.Contains(errOut, "want 1, 2 or 3") {
		t.Errorf("hint level 7: code %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "list", "--root", t.TempDir())
	if code != 1 || !strings.Contains(errOut, "exercises") {
		t.Errorf("list outside a workbook: code %d, stderr %q", code, errOut)
	}
}

func TestHintShowsTheNextLevel(t *testing.T) {
	root := copyWorkbook(t)
	w, _, out := testBench(t, root, "")
	for level, want := range []string{"Hint 1 of 3 (nudge)", "Hint 2 of 3 (concept)", "Hint 3 of 3 (near-answer)", "Hint 3 of 3 (near-answer)"} {
		out.Reset()
		if err := w.hint("01-size-bar", 0); err != nil {
			t.Fatal(err)
		}
		wantLines(t, out.String(), want)
		if level == 3 {
			wantLines(t, out.String(), "That is the last hint. saccbook solution 01-size-bar")
		}
	}
	if n := progressOf(t, root).Exercises["01-size-bar"].HintsShown; n != 3 {
		t.Errorf("hints_shown = %d, want 3", n)
	}
	out.Reset()
	if err := w.hint("01-size-bar", 1); err != nil {
		t.Fatal(err)
	}
	wantLines(t, out.String(), "Hint 1 of 3 (nudge)")
}

func TestHintSpeaksToTheLastFailure(t *testing.T) {
	root := copyWorkbook(t)
	writeFile(t, filepath.Join(root, "exercises", "01-size-bar", "exercise.go"), "package sizebar // not yet\n")
	w, _, out := testBench(t, root, "")
	if err := w.hint("01-size-bar", 0); err != nil {
		t.Fatal(err)
	}
	wantLines(t, out.String(), "Run saccbook check 01-size-bar first")
	if err := w.check(context.Background(), "01-size-bar"); err != exitStatus(1) {
		t.Fatalf("check of a failing exercise: %v, want exit status 1", err)
	}
	out.Reset()
	if err := w.hint("01-size-bar", 0); err != nil {
		t.Fatal(err)
	}
	wantLines(t, out.String(), "For the failure you saw last (TestRestoresTheBAR):", "Read the BAR before you write all ones", "Hint 2 of 3")
}

func TestSolutionAsksUntilSolved(t *testing.T) {
	root := copyWorkbook(t)
	for _, tc := range []struct {
		stdin string
		yes   bool
		shown bool
	}{
		{"no\n", false, false},
		{"", false, false}, // end of input is a no
		{"yes\n", false, true},
		{"", true, true},
	} {
		w, _, out := testBench(t, root, tc.stdin)
		if err := w.solution("01-size-bar", tc.yes); err != nil {
			t.Fatal(err)
		}
		shown := strings.Contains(out.String(), "// solutions/01-size-bar/exercise.go\n")
		if shown != tc.shown {
			t.Errorf("stdin %q, --yes %v: shown %v, want %v:\n%s", tc.stdin, tc.yes, shown, tc.shown, out)
		}
		if !tc.yes && !strings.Contains(out.String(), "You have not solved 01-size-bar yet") {
			t.Errorf("stdin %q: no question asked:\n%s", tc.stdin, out)
		}
	}
	if !progressOf(t, root).Exercises["01-size-bar"].SolutionSeen {
		t.Error("solution_seen not recorded")
	}
	// Once solved: shown at once.
	copyTree(t, filepath.Join(root, "solutions", "01-find-device"), filepath.Join(root, "exercises", "01-find-device"))
	w, _, out := testBench(t, root, "")
	if err := w.check(context.Background(), "01-find-device"); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := w.solution("01-find-device", false); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, "not solved") || !strings.Contains(s, "func FindSACC") {
		t.Errorf("solved exercise:\n%s", s)
	}
}

func TestResetKeepsABackup(t *testing.T) {
	root := copyWorkbook(t)
	work := filepath.Join(root, "exercises", "01-size-bar", "exercise.go")
	stub := readFile(t, filepath.Join(root, "exercises", "01-size-bar", ".stub", "exercise.go"))
	const mine = "package sizebar // an hour of my work\n"
	writeFile(t, work, mine)

	w, _, out := testBench(t, root, "no\n")
	if err := w.reset("01-size-bar", false); err != nil {
		t.Fatal(err)
	}
	if readFile(t, work) != mine || !strings.Contains(out.String(), "Nothing changed.") {
		t.Fatalf("answered no, yet:\n%s", out)
	}

	w, _, out = testBench(t, root, "yes\n")
	if err := w.reset("01-size-bar", false); err != nil {
		t.Fatal(err)
	}
	backups := filepath.Join(root, "exercises", ".backup", "01-size-bar")
	backup := filepath.Join(backups, "20260304-050607", "exercise.go")
	if got := readFile(t, backup); got != mine {
		t.Errorf("backup holds %q, want the learner's file", got)
	}
	if readFile(t, work) != stub {
		t.Error("the working file is not the stub after reset")
	}
	wantLines(t, out.String(), "exercises/.backup/01-size-bar/20260304-050607/")

	// Nothing to reset now; a second reset in the same second keeps both backups.
	out.Reset()
	if err := w.reset("01-size-bar", true); err != nil {
		t.Fatal(err)
	}
	wantLines(t, out.String(), "as shipped already")
	writeFile(t, work, "package sizebar // second try\n")
	if err := w.reset("01-size-bar", true); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(backups, "20260304-050607-2", "exercise.go")); got != "package sizebar // second try\n" {
		t.Errorf("second backup holds %q", got)
	}
	if readFile(t, backup) != mine {
		t.Error("the first backup was overwritten")
	}
}

func TestWatchReRunsOnSaveAndMovesOn(t *testing.T) {
	root := copyWorkbook(t)
	w, f, out := testBench(t, root, "")
	f.ran = make(chan string)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- w.watch(ctx, "", false) }()

	expect := func(id string) {
		t.Helper()
		select {
		case got := <-f.ran:
			if got != id {
				t.Fatalf("watch ran %s, want %s", got, id)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("watch did not run %s:\n%s", id, out)
		}
	}
	expect("01-find-device") // at once
	waitFor(t, out, "Waiting for a change", 1)
	writeFile(t, filepath.Join(root, "exercises", "01-find-device", "exercise.go"), "package finddevice // closer\n")
	expect("01-find-device") // on save
	waitFor(t, out, "Waiting for a change", 2)
	copyTree(t, filepath.Join(root, "solutions", "01-find-device"), filepath.Join(root, "exercises", "01-find-device"))
	expect("01-find-device")
	expect("01-size-bar") // solved: on to the next
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wantLines(t, out.String(), "01-find-device: done, the 1 test passes.", "On to 01-size-bar: Size a BAR")
}

// waitFor waits until s has appeared n times in out.
func waitFor(t *testing.T, out *syncbuf.Buffer, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(out.String(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%q has not appeared %d times in:\n%s", s, n, out)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWatchManualRunsOnEnter(t *testing.T) {
	root := copyWorkbook(t)
	w, f, out := testBench(t, root, "\n\nq\n")
	if err := w.watch(context.Background(), "01-size-bar", true); err != nil {
		t.Fatal(err)
	}
	if len(f.runs) != 3 {
		t.Errorf("ran %d times (%v), want 3: at start and for each Enter", len(f.runs), f.runs)
	}
	wantLines(t, out.String(), "Press Enter to run the tests again")
}

// addTally adds an exercise of its own to the copy, 02-tally, whose seven tests
// (one with subtests, one skipped) fail three at a time on the stub, so that
// check's count can be checked against real go test output whatever the
// book's exercises become.
func addTally(t *testing.T, root string) {
	t.Helper()
	dir := filepath.Join(root, "exercises", "02-tally")
	writeFile(t, filepath.Join(dir, "meta.json"), `{"id": "02-tally", "title": "Count the tests", "chapter": 2,
		"chapter_url": "/chapters/02-mmio", "replay": "saccbook run job", "files": ["exercise.go"],
		"hints": ["one", "two", "three"]}`)
	const stub = "package tally\n\n// Answer is the answer.\nfunc Answer() int { return 0 }\n\n// Double doubles n.\nfunc Double(n int) int { return 0 }\n"
	writeFile(t, filepath.Join(dir, "exercise.go"), stub)
	writeFile(t, filepath.Join(dir, ".stub", "exercise.go"), stub)
	writeFile(t, filepath.Join(root, "solutions", "02-tally", "exercise.go"),
		"package tally\n\n// Answer is the answer.\nfunc Answer() int { return 42 }\n\n// Double doubles n.\nfunc Double(n int) int { return 2 * n }\n")
	writeFile(t, filepath.Join(dir, "tally_test.go"), `package tally

import "testing"

func TestA(t *testing.T) {}

func TestB(t *testing.T) {
	if Answer() != 42 {
		t.Error("Answer() is not 42")
	}
}

func TestC(t *testing.T) {
	t.Run("one", func(t *testing.T) {})
	t.Run("two", func(t *testing.T) {
		if Double(2) != 4 {
			t.Error("Double(2) is not 4")
		}
	})
}

func TestD(t *testing.T) {}

func TestE(t *testing.T) {
	if Double(3) != 6 {
		t.Error("Double(3) is not 6")
	}
}

func TestF(t *testing.T) { t.Skip("not today") }
`)
}

// TestCheckEndToEnd runs the real go test on the copy, through the command line,
// and checks what check says and its exit status.
func TestCheckEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	root := copyWorkbook(t)
	addTally(t, root)
	copyTree(t, filepath.Join(root, "solutions", "01-find-device"), filepath.Join(root, "exercises", "01-find-device"))
	code, out, errOut := runCLI(t, "", "check", "--root", root)
	if code != 0 {
		t.Fatalf("check, with the one started exercise solved: code %d\n%s\n%s", code, out, errOut)
	}
	wantLines(t, out, "01-find-device: done, all ", "01-find-device    done", "01-size-bar       not started", "1 of 3 done.")
	wantLines(t, errOut, "running 01-find-device…")

	code, out, _ = runCLI(t, "", "check", "02-tally", "--root", root)
	if code != 1 {
		t.Errorf("check 02-tally on the stub: code %d, want 1", code)
	}
	wantLines(t, out, "Answer() is not 42", "02-tally: 3 of 7 tests fail (1 skipped): TestB, TestC/two, TestE.", "02-tally          failing")

	for _, tc := range []struct{ src, want string }{
		{"package tally\n\nfunc Answer() int { return }\n", "02-tally: does not compile, so no test ran. Fix what it says above and check again."},
		{"package tally\n\nimport \"fmt\"\n\nfunc Answer() int { fmt.Printf(\"%d\", \"x\"); return 42 }\n\nfunc Double(n int) int { return 2 * n }\n",
			"02-tally: go vet refused it, so no test ran. Fix what it says above and check again."},
	} {
		writeFile(t, filepath.Join(root, "exercises", "02-tally", "exercise.go"), tc.src)
		code, out, _ = runCLI(t, "", "check", "02-tally", "--root", root)
		if code != 1 || strings.Contains(out, " tests fail") {
			t.Errorf("check of %q: code %d, want 1 and no count of tests:\n%s", tc.src, code, out)
		}
		wantLines(t, out, tc.want)
	}
	// Without an ID, every started exercise runs, and one failing is enough.
	code, out, _ = runCLI(t, "", "check", "--root", root)
	if code != 1 {
		t.Errorf("check of every started exercise, one failing: code %d, want 1", code)
	}
	wantLines(t, out, "01-find-device: done", "02-tally: go vet refused it, so no test ran. saccbook check 02-tally shows why.")

	copyTree(t, filepath.Join(root, "solutions", "02-tally"), filepath.Join(root, "exercises", "02-tally"))
	code, out, _ = runCLI(t, "", "check", "02-tally", "--root", root)
	if code != 0 {
		t.Errorf("check 02-tally solved: code %d\n%s", code, out)
	}
	wantLines(t, out, "02-tally: done, all 7 tests pass (1 skipped).")

	var p struct {
		Exercises map[string]struct {
			Status string `json:"status"`
		} `json:"exercises"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(root, workbook.ProgressFile))), &p); err != nil {
		t.Fatal(err)
	}
	if p.Exercises["01-find-device"].Status != "done" || p.Exercises["02-tally"].Status != "done" {
		t.Errorf("progress file: %+v", p)
	}
}
