package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/adversary"
	"github.com/saccbook/saccbook/workbook"
)

// adversaryRoot is an empty workspace: go.work and an exercises directory.
func adversaryRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.work"), []byte("go 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "exercises"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

var replayLine = regexp.MustCompile(`--schedule ([0-9,]+)`)

// TestAdversarySolveThenPlay: for every level, solve prints a schedule that
// play replays to a win, or says that none breaks it; list then shows the
// record, and a hunt's record in the same file survives.
func TestAdversarySolveThenPlay(t *testing.T) {
	root := adversaryRoot(t)
	hunts := `{"hunts": {"3": {"status": "solved", "score": 8}}}`
	if err := os.WriteFile(filepath.Join(root, workbook.ProgressFile), []byte(hunts), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range adversary.Levels() {
		code, out, errOut := runCLI(t, "", "adversary", "solve", l.Name, "--root", root)
		if code != 0 {
			t.Fatalf("solve %s: %d %s", l.Name, code, errOut)
		}
		m := replayLine.FindStringSubmatch(out)
		if !l.Breakable {
			if m != nil || !strings.Contains(out, "no schedule of any length does") {
				t.Errorf("solve %s, a correct driver:\n%s", l.Name, out)
			}
			continue
		}
		if m == nil {
			t.Fatalf("solve %s printed no schedule:\n%s", l.Name, out)
		}
		code, out, errOut = runCLI(t, "", "adversary", "play", fmt.Sprint(l.Number), "--schedule", m[1], "--root", root)
		if code != 0 || !strings.Contains(out, "You broke it: ") {
			t.Errorf("play %s --schedule %s: %d %s\n%s", l.Name, m[1], code, errOut, out)
		}
	}
	code, out, _ := runCLI(t, "", "adversary", "list", "--root", root)
	if code != 0 || !strings.Contains(out, "won in 6") || !strings.Contains(out, "proved") ||
		!strings.Contains(out, fmt.Sprintf("7 won, 6 proved, of %d levels", len(adversary.Levels()))) {
		t.Errorf("list after solving and winning all:\n%s", out)
	}
	p, err := workbook.LoadProgress(root)
	if err != nil || p.HuntStatusOf(3).Score != 8 {
		t.Errorf("the hunt's record: %+v, %v", p, err)
	}
}

// TestAdversaryPlayFromStdin: choices typed one per line; a bad line is
// answered and the game goes on; a game that holds exits 1 and is recorded as
// tried.
func TestAdversaryPlayFromStdin(t *testing.T) {
	root := adversaryRoot(t)
	l, _ := adversary.Lookup("wmb")
	r := l.Solve(adversary.DefaultBound)
	if r.Broken() {
		t.Fatal("wmb broke")
	}
	// Always the first choice: the driver runs to its end, then the device.
	in := "x\n9\n" + strings.Repeat("1\n", 20)
	code, out, errOut := runCLI(t, in, "adversary", "play", "wmb", "--root", root)
	if code != 1 || !strings.Contains(out, "The driver held") || !strings.Contains(out, "This driver is correct: no schedule breaks it") || !strings.Contains(out, `"x": type a choice from 1 to`) || !strings.Contains(out, `"9": type a choice`) {
		t.Errorf("play wmb: %d %s\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "-> ") || !strings.Contains(out, "store buffer: sq[0].src_addr = 0x200000") {
		t.Errorf("play wmb shows no state:\n%s", out)
	}
	p, _ := workbook.LoadProgress(root)
	if a := p.AdversaryOf("wmb"); a.Status != workbook.AdversaryTried || a.Plays != 1 {
		t.Errorf("record: %+v", a)
	}
	// Stopped before the end: exit 1, no game recorded.
	code, out, _ = runCLI(t, "1\nq\n", "adversary", "play", "missing-wmb", "--root", root)
	if code != 1 || !strings.Contains(out, "stopped after 1 choices") {
		t.Errorf("quit: %d\n%s", code, out)
	}
	p, _ = workbook.LoadProgress(root)
	if a := p.AdversaryOf("missing-wmb"); a.Status != workbook.AdversaryNotTried {
		t.Errorf("a game stopped half-way is recorded: %+v", a)
	}
}

func TestAdversaryErrors(t *testing.T) {
	root := adversaryRoot(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"adversary"}, 2, "which? list, play or solve"},
		{[]string{"adversary", "fight"}, 2, `unknown adversary command "fight"`},
		{[]string{"adversary", "play"}, 2, "wants one level"},
		{[]string{"adversary", "play", "no-such"}, 1, `no adversary level "no-such"`},
		{[]string{"adversary", "solve", "42"}, 1, "no adversary level 42"},
		{[]string{"adversary", "play", "1", "--schedule", "1,x"}, 2, "malformed schedule: choice 2"},
		{[]string{"adversary", "play", "1", "--schedule", "7"}, 1, "choice 1 of the schedule is 7, but only choice 1 is open"},
		{[]string{"adversary", "solve", "1", "--schedule", "1"}, 2, "--schedule goes with adversary play"},
		{[]string{"adversary", "play", "1", "--schedule", "1,1,1,1,4,4,1"}, 1, "the game was over after"},
		{[]string{"adversary", "play", "1", "--bound", "3"}, 2, "--bound goes with adversary solve"},
		{[]string{"adversary", "solve", "1", "--bound", "0"}, 2, "--bound 0"},
		{[]string{"adversary", "list", "extra"}, 2, `unexpected argument "extra"`},
	} {
		code, out, errOut := runCLI(t, "", append(c.args, "--root", root)...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: %d, stderr %q (stdout %.200q), want %d and %q", c.args, code, errOut, out, c.code, c.want)
		}
	}
	// A corrupt progress file is an error before any game, and stays as it was.
	bad := `{"adversary": {"wmb": {"status": "champion"}}}`
	path := filepath.Join(root, workbook.ProgressFile)
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"list"}, {"play", "1", "--schedule", "1"}, {"solve", "wmb"}} {
		code, _, errOut := runCLI(t, "", append(append([]string{"adversary"}, args...), "--root", root)...)
		if code != 1 || !strings.Contains(errOut, "afresh") {
			t.Errorf("%v with a corrupt progress file: %d %q", args, code, errOut)
		}
	}
	if data, _ := os.ReadFile(path); string(data) != bad {
		t.Errorf("the corrupt file changed: %s", data)
	}
}

// TestServedRecords: the server's games go into the same record as the
// terminal's, beside the rest of the progress file.
func TestServedRecords(t *testing.T) {
	root := adversaryRoot(t)
	hunts := `{"hunts": {"3": {"status": "solved", "score": 8}}}`
	if err := os.WriteFile(filepath.Join(root, workbook.ProgressFile), []byte(hunts), 0o644); err != nil {
		t.Fatal(err)
	}
	r := servedRecords{root}
	if err := r.RecordPlay("missing-wmb", true, 6); err != nil {
		t.Fatal(err)
	}
	if err := r.RecordPlay("wmb", false, 9); err != nil {
		t.Fatal(err)
	}
	got, err := r.AdversaryStatus()
	if err != nil || got["missing-wmb"] != "won" || got["wmb"] != "tried" || len(got) != 2 {
		t.Errorf("status: %v, %v", got, err)
	}
	code, out, _ := runCLI(t, "", "adversary", "list", "--root", root)
	if code != 0 || !strings.Contains(out, "won in 6") {
		t.Errorf("list:\n%s", out)
	}
	if p, err := workbook.LoadProgress(root); err != nil || p.HuntStatusOf(3).Score != 8 {
		t.Errorf("the hunt's record: %v", err)
	}
}
