package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
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
	// fail, if set, is what every run returns instead of results, and panics
	// makes every run panic: the ways a run can go wrong.
	fail   error
	panics bool
}

func (f *fakeRunner) run(ctx context.Context, exs []*workbook.Exercise, v workbook.Variant, progress func(*workbook.Exercise, *workbook.Result)) (map[string]*workbook.Result, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	if f.panics {
		panic("the runner broke")
	}
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

// testBench opens the copy with the fake runner and a fixed clock, as a learner
// at a terminal who types whole lines (stdin) would have it: questions are
// asked, keys are lines, nothing is cleared.
func testBench(t *testing.T, root, stdin string) (*bench, *fakeRunner, *syncbuf.Buffer) {
	t.Helper()
	return testBenchReading(t, root, strings.NewReader(stdin))
}

func testBenchReading(t *testing.T, root string, stdin io.Reader) (*bench, *fakeRunner, *syncbuf.Buffer) {
	t.Helper()
	var out syncbuf.Buffer
	w, err := openBench(root, &env{stdin: stdin, stdout: &out, stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRunner{root: root}
	w.run = f.run
	w.now = func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }
	w.poll = 5 * time.Millisecond
	w.interactive, w.ci = true, false
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

func TestSolutionAsksOnceAndRemembers(t *testing.T) {
	root := copyWorkbook(t)
	const shownLine = "// solutions/01-size-bar/exercise.go\n"
	for _, tc := range []struct {
		stdin        string
		yes          bool
		asked, shown bool
	}{
		{"no\n", false, true, false},
		{"", false, true, false}, // end of input is a no
		{"yes\n", false, true, true},
		{"", false, false, true}, // answered yes once: not asked again
		{"", true, false, true},
	} {
		w, _, out := testBench(t, root, tc.stdin)
		if err := w.solution("01-size-bar", tc.yes); err != nil {
			t.Fatal(err)
		}
		shown := strings.Contains(out.String(), shownLine)
		asked := strings.Contains(out.String(), "You have not solved 01-size-bar yet")
		if shown != tc.shown || asked != tc.asked {
			t.Errorf("stdin %q, --yes %v: asked %v, shown %v; want %v, %v:\n%s", tc.stdin, tc.yes, asked, shown, tc.asked, tc.shown, out)
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

// TestSolutionAndResetWithNoOneToAsk: without a terminal, or under CI, the
// questions cannot be asked, so solution and reset refuse, say how to force
// them, change nothing and exit non-zero.
func TestSolutionAndResetWithNoOneToAsk(t *testing.T) {
	root := copyWorkbook(t)
	work := filepath.Join(root, "exercises", "01-size-bar", "exercise.go")
	const mine = "package sizebar // my work\n"
	writeFile(t, work, mine)
	// Through the command line, standard input is a reader, not a terminal: a
	// "yes" on it is no answer.
	code, out, errOut := runCLI(t, "yes\n", "solution", "01-size-bar", "--root", root)
	if code != 1 || strings.Contains(out, "package sizebar") ||
		!strings.Contains(errOut, "standard input is not a terminal") || !strings.Contains(errOut, "saccbook solution 01-size-bar --yes shows it") {
		t.Errorf("solution with no terminal: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "yes\n", "reset", "01-size-bar", "--root", root)
	if code != 1 || !strings.Contains(errOut, "nothing changed") || !strings.Contains(errOut, "saccbook reset 01-size-bar --yes") {
		t.Errorf("reset with no terminal: code %d, stderr %q", code, errOut)
	}
	if readFile(t, work) != mine {
		t.Fatal("reset with no terminal changed the file")
	}
	if p := progressOf(t, root).Exercises["01-size-bar"]; p != nil && p.SolutionSeen {
		t.Error("a refused solution was recorded as seen")
	}

	// Under CI, even a terminal is not asked.
	w, _, _ := testBench(t, root, "yes\n")
	w.term, w.ci, w.interactive = &fakeTerminal{}, true, false
	if err := w.reset("01-size-bar", false); err == nil || !strings.Contains(err.Error(), "CI is set") {
		t.Errorf("reset under CI: %v", err)
	}
	if err := w.solution("01-size-bar", false); err == nil || !strings.Contains(err.Error(), "CI is set") {
		t.Errorf("solution under CI: %v", err)
	}
	if readFile(t, work) != mine {
		t.Fatal("reset under CI changed the file")
	}

	// --yes says it for them.
	code, out, _ = runCLI(t, "", "solution", "01-size-bar", "--yes", "--root", root)
	if code != 0 || !strings.Contains(out, "// solutions/01-size-bar/exercise.go") {
		t.Errorf("solution --yes: code %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "", "reset", "01-size-bar", "--yes", "--root", root)
	if code != 0 || !strings.Contains(out, "back to the stub") {
		t.Errorf("reset --yes: code %d\n%s", code, out)
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
	wantLines(t, out.String(), "exercises/.backup/01-size-bar/20260304-050607/", "saccbook restore 01-size-bar brings them back")

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

func TestRestoreBringsABackupBack(t *testing.T) {
	root := copyWorkbook(t)
	work := filepath.Join(root, "exercises", "01-size-bar", "exercise.go")
	backups := filepath.Join(root, "exercises", ".backup", "01-size-bar")

	code, _, errOut := runCLI(t, "", "restore", "01-size-bar", "--root", root)
	if code != 1 || !strings.Contains(errOut, "no backup of 01-size-bar in exercises/.backup/01-size-bar/") {
		t.Errorf("restore with no backup: code %d, stderr %q", code, errOut)
	}
	if code, out, _ := runCLI(t, "", "restore", "01-size-bar", "--list", "--root", root); code != 0 || !strings.Contains(out, "No backup of 01-size-bar") {
		t.Errorf("restore --list with no backup: code %d, stdout %q", code, out)
	}

	// Eleven resets in one second: "-10" must sort after "-9".
	w, _, out2 := testBench(t, root, "")
	for i := 1; i <= 11; i++ {
		writeFile(t, work, fmt.Sprintf("package sizebar // try %d\n", i))
		if err := w.reset("01-size-bar", true); err != nil {
			t.Fatal(err)
		}
	}
	out2.Reset()
	if err := w.restore("01-size-bar", "", true); err != nil {
		t.Fatal(err)
	}
	list := out2.String()
	wantLines(t, list, "Backups of 01-size-bar in exercises/.backup/01-size-bar/, newest last:",
		"20260304-050607-9 2026-03-04 05:06:07 exercise.go\n  20260304-050607-10", "saccbook restore 01-size-bar NAME")
	if !strings.HasPrefix(strings.Split(list, "\n")[1], "  20260304-050607 ") {
		t.Errorf("the oldest backup is not listed first:\n%s", list)
	}

	// The newest by default; the stub as it stands needs no backup.
	out2.Reset()
	if err := w.restore("01-size-bar", "", false); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, work); got != "package sizebar // try 11\n" {
		t.Errorf("after restore the file holds %q, want the newest backup", got)
	}
	wantLines(t, out2.String(), "01-size-bar holds backup 20260304-050607-11 again (exercise.go)")
	if _, err := os.Stat(filepath.Join(backups, "20260304-050607-12")); err == nil {
		t.Error("the stub was backed up")
	}
	if s := progressOf(t, root).Exercises["01-size-bar"].Status; s != workbook.Started {
		t.Errorf("status after restore: %s, want started", s)
	}

	// Restoring what is there already changes nothing.
	out2.Reset()
	if err := w.restore("01-size-bar", "20260304-050607-11", false); err != nil {
		t.Fatal(err)
	}
	wantLines(t, out2.String(), "nothing to restore")

	// One by name: the learner's current work is backed up first.
	const now = "package sizebar // what I have now\n"
	writeFile(t, work, now)
	code, out, errOut := runCLI(t, "", "restore", "01-size-bar", "20260304-050607", "--root", root)
	if code != 0 {
		t.Fatalf("restore by name: code %d, stderr %q", code, errOut)
	}
	if got := readFile(t, work); got != "package sizebar // try 1\n" {
		t.Errorf("after restore by name the file holds %q", got)
	}
	saved, err := filepath.Glob(filepath.Join(backups, "*", "exercise.go"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range saved {
		found = found || readFile(t, p) == now
	}
	if !found || !strings.Contains(out, "Your files as they were are in exercises/.backup/01-size-bar/") {
		t.Errorf("the work in place before restore was not backed up (%d backups):\n%s", len(saved), out)
	}

	code, _, errOut = runCLI(t, "", "restore", "01-size-bar", "yesterday", "--root", root)
	if code != 1 || !strings.Contains(errOut, `no backup "yesterday" of 01-size-bar`) {
		t.Errorf("restore of an unknown backup: code %d, stderr %q", code, errOut)
	}
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

// TestBackupsAreIgnoredByGit: what reset and restore save is the learner's, and
// must not show up as changes to the book (nor be committed by accident).
func TestBackupsAreIgnoredByGit(t *testing.T) {
	root, err := workbook.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	if out, err := exec.Command(git, "-C", root, "rev-parse", "--is-inside-work-tree").Output(); err != nil || strings.TrimSpace(string(out)) != "true" {
		t.Skip("not a git checkout")
	}
	b, err := workbook.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	ex := b.Exercises[0]
	backup := b.NextBackup(ex, time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	rel, _ := filepath.Rel(root, filepath.Join(backup, ex.Files[0]))
	if out, err := exec.Command(git, "-C", root, "check-ignore", "-v", rel).CombinedOutput(); err != nil {
		t.Errorf("git does not ignore %s: %v %s", rel, err, out)
	}
}
