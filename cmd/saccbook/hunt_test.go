package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/saccbook/saccbook/sacc/hunt"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/workbook"
)

// huntRoot is an empty workspace (go.work and an exercises directory) whose
// learner is "tester", with a key made by saccbook hunt key, then replaced by a
// fixed one.
func huntRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.work"), []byte("go 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "exercises"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "", "hunt", "key", "--learner", "tester", "--root", root); code != 0 {
		t.Fatalf("hunt key: %d %s", code, errOut)
	}
	// The key made is random; a fixed one makes every run of the tests the same.
	k := &workbook.HuntKey{Key: bytes.Repeat([]byte{0x77}, workbook.HuntKeySize), Learner: "tester"}
	if err := workbook.SaveHuntKey(filepath.Join(root, workbook.HuntKeyFile), k); err != nil {
		t.Fatal(err)
	}
	return root
}

var answerLine = regexp.MustCompile(`--bug (\S+) --event ([0-9]+)`)

// answerOf asks saccbook hunt answer for the root's learner.
func answerOf(t *testing.T, root string, n int) (string, uint64) {
	t.Helper()
	code, out, errOut := runCLI(t, "", "hunt", "answer", strconv.Itoa(n), "--key", filepath.Join(root, workbook.HuntKeyFile), "--learner", "tester")
	m := answerLine.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("hunt answer %d: %d %q %q", n, code, out, errOut)
	}
	ev, _ := strconv.ParseUint(m[2], 10, 64)
	return m[1], ev
}

func progressBytes(t *testing.T, root string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, workbook.ProgressFile))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return b
}

// TestHuntAnswerIsAcceptedAndWrongOnesCost, for every hunt: a wrong bug and an
// early or late event are refused, say which part was wrong and cost 2 each;
// the answer that saccbook hunt answer gives is accepted and scores what is
// left; a later submission changes nothing.
func TestHuntAnswerIsAcceptedAndWrongOnesCost(t *testing.T) {
	root := huntRoot(t)
	for _, h := range hunt.Catalogue() {
		n := strconv.Itoa(h.Number)
		bug, ev := answerOf(t, root, h.Number)
		wrongBug := "phase-first"
		if bug == wrongBug {
			wrongBug = "no-cq-head"
		}
		submit := func(b string, e uint64) (int, string) {
			code, out, errOut := runCLI(t, "", "hunt", "submit", n, "--bug", b, "--event", strconv.FormatUint(e, 10), "--root", root)
			return code, out + errOut
		}
		code, out := submit(wrongBug, ev)
		if code != 1 || !strings.Contains(out, "the bug is not") || !strings.Contains(out, "now worth 8 of 10") {
			t.Errorf("hunt %s, wrong bug: %d %q", n, code, out)
		}
		code, out = submit(bug, ev+1)
		if code != 1 || !strings.Contains(out, "too late") || !strings.Contains(out, "now worth 6 of 10") || strings.Contains(out, strconv.FormatUint(ev, 10)+" ") {
			t.Errorf("hunt %s, late event: %d %q", n, code, out)
		}
		code, out = submit(bug, ev)
		if code != 0 || !strings.Contains(out, "Right") || !strings.Contains(out, "solved: 6 of 10") {
			t.Errorf("hunt %s, the answer: %d %q", n, code, out)
		}
		before := progressBytes(t, root)
		code, out = submit(wrongBug, ev)
		if code != 1 || !strings.Contains(out, "solved already") || !bytes.Equal(before, progressBytes(t, root)) {
			t.Errorf("hunt %s, after solving: %d %q", n, code, out)
		}
	}
	p, err := workbook.LoadProgress(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hunt.Catalogue() {
		if rec := p.HuntStatusOf(h.Number); rec.Status != workbook.HuntSolved || rec.Score != 6 || rec.Wrong != 2 {
			t.Errorf("hunt %d's record: %+v", h.Number, rec)
		}
	}
	code, out, _ := runCLI(t, "", "hunt", "list", "--root", root)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%d of %d solved, %d of %d points", len(hunt.Catalogue()), len(hunt.Catalogue()), 6*len(hunt.Catalogue()), 10*len(hunt.Catalogue()))) {
		t.Errorf("hunt list: %q", out)
	}
}

// TestHuntEarlyEventAndBothWrong: an early event says so; both parts wrong say
// so; neither gives the event away.
func TestHuntEarlyEventAndBothWrong(t *testing.T) {
	root := huntRoot(t)
	bug, ev := answerOf(t, root, 8)
	code, out, _ := runCLI(t, "", "hunt", "submit", "8", "--bug", bug, "--event", strconv.FormatUint(ev-1, 10), "--root", root)
	if code != 1 || !strings.Contains(out, "too early") {
		t.Errorf("early: %d %q", code, out)
	}
	code, out, _ = runCLI(t, "", "hunt", "submit", "8", "--bug", "missing-wmb", "--event", "1", "--root", root)
	if code != 1 || !strings.Contains(out, "Neither part is right") || regexp.MustCompile(`\b`+strconv.FormatUint(ev, 10)+`\b`).MatchString(out) {
		t.Errorf("both wrong: %d %q", code, out)
	}
}

// TestHuntMistakesCostNothing: malformed or unknown input is an error that
// changes nothing in the progress file, never a panic.
func TestHuntMistakesCostNothing(t *testing.T) {
	root := huntRoot(t)
	runCLI(t, "", "hunt", "start", "2", "--root", root)
	before := progressBytes(t, root)
	past := strconv.Itoa(len(hunt.Catalogue()) + 1) // the first number with no hunt
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"submit", "2", "--bug", "missing-wmb", "--event", "abc"}, "want an event's sequence number"},
		{[]string{"submit", "2", "--bug", "missing-wmb", "--event", "-5"}, "numbered from 1"},
		{[]string{"submit", "2", "--bug", "missing-wmb", "--event", "0"}, "numbered from 1"},
		{[]string{"submit", "2", "--bug", "gremlins", "--event", "10"}, "not in the catalog"},
		{[]string{"submit", "99", "--bug", "missing-wmb", "--event", "10"}, "no hunt 99"},
		{[]string{"submit", "two", "--bug", "missing-wmb", "--event", "10"}, `hunt number "two"`},
		{[]string{"submit", "2", "--bug", "missing-wmb"}, "both --bug NAME and --event SEQ"},
		{[]string{"submit", "2", "--event", "10"}, "both --bug NAME and --event SEQ"},
		{[]string{"start", "0"}, `hunt number "0"`},
		{[]string{"start", past}, "no hunt " + past},
		{[]string{"list", "--bug", "x"}, "--bug does not go with hunt list"},
		{[]string{"frob"}, `unknown hunt command "frob"`},
		{[]string{}, "which?"},
		{[]string{"answer", "2"}, "--key FILE and --learner ID"},
	} {
		args := append([]string{"hunt"}, tc.args...)
		if len(tc.args) > 0 && tc.args[0] != "answer" {
			args = append(args, "--root", root)
		}
		code, out, errOut := runCLI(t, "", args...)
		if code == 0 || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("%v: code %d, %q; want an error with %q", tc.args, code, out+errOut, tc.want)
		}
	}
	if !bytes.Equal(before, progressBytes(t, root)) {
		t.Errorf("a mistake changed the progress file:\n%s\nwas\n%s", progressBytes(t, root), before)
	}
}

// TestHuntBrokenFiles: a corrupt key file or progress file is an error that
// says what to do, and neither file is replaced.
func TestHuntBrokenFiles(t *testing.T) {
	root := huntRoot(t)
	keyPath := filepath.Join(root, workbook.HuntKeyFile)
	good, _ := os.ReadFile(keyPath)
	if err := os.WriteFile(keyPath, good[:len(good)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"hunt", "list"}, {"hunt", "start", "1"}, {"run", "--hunt", "1"}, {"monitor", "--hunt", "1"},
		{"hunt", "submit", "1", "--bug", "no-cq-head", "--event", "5"}} {
		code, out, errOut := runCLI(t, "", append(args, "--root", root)...)
		if code == 0 || !strings.Contains(errOut, "delete it") {
			t.Errorf("%v with a corrupt key: %d %q %q", args, code, out, errOut)
		}
	}
	if b, _ := os.ReadFile(keyPath); !bytes.Equal(b, good[:len(good)/3]) {
		t.Error("the corrupt key file was replaced")
	}
	if err := os.WriteFile(keyPath, good, 0o600); err != nil {
		t.Fatal(err)
	}
	progress := filepath.Join(root, workbook.ProgressFile)
	if err := os.WriteFile(progress, []byte(`{"hunts": {"1": {"status": "started", "wrong": 3`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "", "hunt", "submit", "1", "--bug", "no-cq-head", "--event", "5", "--root", root)
	if code == 0 || !strings.Contains(errOut, workbook.ProgressFile) {
		t.Errorf("submit with a corrupt progress file: %d %q", code, errOut)
	}
	if b, _ := os.ReadFile(progress); string(b) != `{"hunts": {"1": {"status": "started", "wrong": 3` {
		t.Errorf("the corrupt progress file was replaced: %s", b)
	}
	code, _, errOut = runCLI(t, "", "hunt", "answer", "1", "--key", filepath.Join(root, "nope"), "--learner", "x")
	if code == 0 || !strings.Contains(errOut, "no such file") {
		t.Errorf("answer with a missing key file: %d %q", code, errOut)
	}
	// A key file handed out by a course is not the learner's to delete: its
	// error gives no such advice.
	bad := filepath.Join(root, "course-key.json")
	if err := os.WriteFile(bad, good[:len(good)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"hunt", "answer", "1", "--key", bad, "--learner", "x"},
		{"hunt", "key", "--import", bad, "--learner", "x", "--root", root}} {
		code, _, errOut := runCLI(t, "", args...)
		if code != 1 || !strings.Contains(errOut, "not a hunt key file") || strings.Contains(errOut, "delete it") {
			t.Errorf("%v with a corrupt handed-out key: %d %q", args, code, errOut)
		}
	}
}

// TestHuntRunsNameNoBug: everything a learner runs for a hunt — its story, its
// trace in every format, the kernel log, the monitor's answers, the list, the
// files in the workspace — names no bug of the catalog; saccbook quirks prints
// the same catalog with a hunt under way as without; and the run is refused
// anything that would change it.
func TestHuntRunsNameNoBug(t *testing.T) {
	root := huntRoot(t)
	_, plainQuirks, _ := runCLI(t, "", "quirks")
	for _, n := range []string{"2", "9", "13"} {
		var said strings.Builder
		for _, args := range [][]string{
			{"hunt", "start", n}, {"hunt", "list"}, {"run", "--hunt", n}, {"run", "--hunt", n, "--dmesg"},
			{"run", "--hunt", n, "--format", "json"}, {"hunt", "key"},
		} {
			code, out, errOut := runCLI(t, "", append(args, "--root", root)...)
			if code != 0 {
				t.Fatalf("%v: %d %s", args, code, errOut)
			}
			said.WriteString(out + errOut)
		}
		code, out, errOut := runCLI(t, "cont\ninfo pci\ninfo registers\ninfo rings\ninfo irq\ninfo iommu\ninfo mtree\nback 50\ninfo rings\n", "monitor", "--hunt", n, "--root", root)
		if code != 0 {
			t.Fatalf("monitor --hunt %s: %d %s", n, code, errOut)
		}
		said.WriteString(out + errOut)
		for _, f := range []string{workbook.ProgressFile, workbook.HuntKeyFile} {
			b, _ := os.ReadFile(filepath.Join(root, f))
			said.Write(b)
		}
		for _, q := range quirk.All() {
			if strings.Contains(said.String(), q.Name) {
				t.Errorf("hunt %s: something the learner sees names %s", n, q.Name)
			}
		}
		if _, q, _ := runCLI(t, "", "quirks"); q != plainQuirks {
			t.Errorf("saccbook quirks differs while hunt %s is under way", n)
		}
	}
	for _, args := range [][]string{
		{"run", "--hunt", "2", "job"}, {"run", "--hunt", "2", "--quirks", "no-cq-head"}, {"run", "--hunt", "2", "--seed", "3"},
		{"run", "--hunt", "2", "--set", "cpu=x86"}, {"run", "--hunt", "2", "--cost", "mmio_read=5"}, {"monitor", "--hunt", "2", "--quirks", "no-cq-head"},
		{"run", "--hunt", "77"},
	} {
		if code, _, errOut := runCLI(t, "", append(args, "--root", root)...); code == 0 || errOut == "" {
			t.Errorf("%v: accepted", args)
		}
	}
}

// TestRunHuntNumbersEvents: the hunt's text trace gives every event its
// sequence number, and the answer's event is there under its number.
func TestRunHuntNumbersEvents(t *testing.T) {
	root := huntRoot(t)
	_, ev := answerOf(t, root, 4)
	code, out, errOut := runCLI(t, "", "run", "--hunt", "4", "--root", root)
	if code != 0 {
		t.Fatal(errOut)
	}
	if !regexp.MustCompile(`(?m)^ +1 +0 [a-z_]+ `).MatchString(out) ||
		!regexp.MustCompile(fmt.Sprintf(`(?m)^ *%d +[0-9]+ [a-z_]+`, ev)).MatchString(out) {
		t.Errorf("no numbered events 1 and %d in:\n%.500s\nstderr %s", ev, out, errOut)
	}
}

// TestHuntKeyImport: a course's key file, taken in with a learner id, decides
// the variants from then on; a course key without a learner id needs one.
func TestHuntKeyImport(t *testing.T) {
	root := huntRoot(t)
	course := filepath.Join(t.TempDir(), "course.key")
	k := &workbook.HuntKey{Key: bytes.Repeat([]byte{0x11}, 32), Course: true}
	if err := os.WriteFile(course, k.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "", "hunt", "key", "--import", course, "--root", root); code == 0 || !strings.Contains(errOut, "--learner ID") {
		t.Errorf("import without a learner: %d %q", code, errOut)
	}
	if code, out, errOut := runCLI(t, "", "hunt", "key", "--import", course, "--learner", "s042", "--root", root); code != 0 || !strings.Contains(out, `learner "s042"`) {
		t.Fatalf("import: %d %q %q", code, out, errOut)
	}
	got, err := workbook.LoadHuntKey(filepath.Join(root, workbook.HuntKeyFile))
	if err != nil || !got.Course || got.Learner != "s042" || !bytes.Equal(got.Key, k.Key) {
		t.Fatalf("key after import: %+v %v", got, err)
	}
	// The instructor's answer for s042, from the course key, is accepted.
	h, _ := hunt.Find(5)
	a, err := h.For(k.Key, "s042").Answer()
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "", "hunt", "submit", "5", "--bug", a.Bug.String(), "--event", strconv.FormatUint(a.Seq, 10), "--root", root)
	if code != 0 || !strings.Contains(out, "solved: 10 of 10") {
		t.Errorf("the course's answer: %d %q", code, out)
	}
}

// TestDeskTakesConcurrentAnswers: the server may take two answers at once;
// each is graded and recorded, none lost.
func TestDeskTakesConcurrentAnswers(t *testing.T) {
	root := huntRoot(t)
	d, err := openDesk(root)
	if err != nil {
		t.Fatal(err)
	}
	dh := deskHunts{d}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := dh.Submit(15, "no-cq-head", "1"); err != nil || v.Solved || v.Problem != "" {
				t.Errorf("submit: %+v %v", v, err)
			}
		}()
	}
	wg.Wait()
	rows, err := dh.List()
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[14]; r.Number != 15 || r.Wrong != 4 || r.Worth != 2 {
		t.Errorf("after four wrong answers at once: %+v", r)
	}
	if v, err := dh.Submit(15, "no-cq-head", "abc"); err != nil || v.Problem == "" {
		t.Errorf("a malformed answer through the server: %+v %v", v, err)
	}
}
