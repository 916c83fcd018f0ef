package main

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saccbook/saccbook/internal/syncbuf"
)

// fakeTerminal stands in for the learner's terminal: it counts the switches
// into raw mode and back.
type fakeTerminal struct {
	raws, restores int
	fail           error
}

func (f *fakeTerminal) raw() (func(), error) {
	if f.fail != nil {
		return nil, f.fail
	}
	f.raws++
	return func() { f.restores++ }, nil
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
	waitForText(t, out, "Waiting for a change", 1)
	writeFile(t, filepath.Join(root, "exercises", "01-find-device", "exercise.go"), "package finddevice // closer\n")
	expect("01-find-device") // on save
	waitForText(t, out, "Waiting for a change", 2)
	copyTree(t, filepath.Join(root, "solutions", "01-find-device"), filepath.Join(root, "exercises", "01-find-device"))
	expect("01-find-device")
	// A copy can reach the file system as more than one change (truncate, then
	// write), and each may start a run of the same exercise; what matters is that
	// once it passes, watch moves on.
	for moved := false; !moved; {
		select {
		case got := <-f.ran:
			switch got {
			case "01-size-bar": // solved: on to the next
				moved = true
			case "01-find-device":
			default:
				t.Fatalf("watch ran %s, want 01-size-bar", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("watch did not move on to 01-size-bar:\n%s", out)
		}
	}
	waitForText(t, out, "01-size-bar] Waiting for a change", 1)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wantLines(t, out.String(), "01-find-device: done, the 1 test passes. On to 01-size-bar: Size a BAR.")
}

// waitForText waits until s has appeared n times in out.
func waitForText(t *testing.T, out *syncbuf.Buffer, s string, n int) {
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
	wantLines(t, out.String(), "Keys: type h (a hint), n (the next exercise) or q (quit) and Enter; Enter alone runs again.")
	if strings.Contains(out.String(), "Waiting for a change") {
		t.Error("manual mode says it waits for a change")
	}
}

// TestWatchKeysAsLines: with no terminal, each key is a line.
func TestWatchKeysAsLines(t *testing.T) {
	root := copyWorkbook(t)
	w, f, out := testBench(t, root, "h\nh\nwhat\nn\nq\n")
	if err := w.watch(context.Background(), "", false); err != nil {
		t.Fatal(err)
	}
	if strings.Join(f.runs, " ") != "01-find-device 01-size-bar" {
		t.Errorf("ran %v; want the first exercise not done, then the next after n", f.runs)
	}
	s := out.String()
	if strings.Contains(s, clearScreen) {
		t.Error("watch cleared a screen that is not a terminal")
	}
	order := []string{"== 01-find-device", "Hint 1 of 3 (nudge)", "More: h shows hint 2 (concept).", "Hint 2 of 3 (concept)", "== 01-size-bar"}
	at := 0
	for _, o := range order {
		i := strings.Index(s[at:], o)
		if i < 0 {
			t.Fatalf("%q is not where it belongs, after %q:\n%s", o, s[:at], s)
		}
		at += i + len(o)
	}
	if n := progressOf(t, root).Exercises["01-find-device"].HintsShown; n != 2 {
		t.Errorf("hints_shown = %d, want 2", n)
	}
	// n from the last exercise comes round to the first one not done.
	w, f, _ = testBench(t, root, "n\nq\n")
	if err := w.watch(context.Background(), "01-size-bar", true); err != nil {
		t.Fatal(err)
	}
	if strings.Join(f.runs, " ") != "01-size-bar 01-find-device" {
		t.Errorf("ran %v; want n to come round to 01-find-device", f.runs)
	}
}

// TestWatchRawKeysOnAScreen: on a terminal, keys act as they are pressed, the
// screen is cleared before each run and shows only the current exercise, and
// the terminal is put back at the end.
func TestWatchRawKeysOnAScreen(t *testing.T) {
	root := copyWorkbook(t)
	w, f, out := testBench(t, root, "hzn\x1b[Aq")
	term := &fakeTerminal{}
	w.term, w.screen = term, true
	if err := w.watch(context.Background(), "", false); err != nil {
		t.Fatal(err)
	}
	if term.raws != 1 || term.restores != 1 {
		t.Errorf("raw mode entered %d times, left %d times; want once each", term.raws, term.restores)
	}
	if strings.Join(f.runs, " ") != "01-find-device 01-size-bar" {
		t.Errorf("ran %v", f.runs)
	}
	s := out.String()
	if n := strings.Count(s, clearScreen); n != 2 {
		t.Errorf("the screen was cleared %d times, want 2 (once before each run):\n%q", n, s)
	}
	screens := strings.Split(s, clearScreen)
	last := screens[len(screens)-1]
	if strings.Contains(last, "01-find-device") || !strings.Contains(last, "== 01-size-bar") {
		t.Errorf("the last screen shows more than the current exercise:\n%s", last)
	}
	if !strings.Contains(last, "There is a hint for this failure: press h.") {
		t.Errorf("watch points to the hint command, not the key:\n%s", last)
	}
	if !strings.Contains(screens[1], "Hint 1 of 3") || !strings.Contains(s, "h hint · n next exercise · q quit · Enter run again") {
		t.Errorf("no hint, or no keys, on the first screen:\n%s", screens[1])
	}
	// In raw mode the terminal no longer returns the carriage itself.
	if strings.Contains(strings.ReplaceAll(s, "\r\n", ""), "\n") {
		t.Errorf("a line ends without a carriage return in raw mode:\n%q", s)
	}
	if _, ok := w.out.(crlf); ok || w.raw {
		t.Error("watch left its raw-mode writer in place")
	}
}

// TestWatchRestoresTheTerminal leaves watch every way it can be left, and
// checks that each puts the terminal back.
func TestWatchRestoresTheTerminal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stdin   string
		manual  bool
		cancel  bool // the context ends, as on SIGINT, SIGTERM or SIGHUP
		fail    bool
		panics  bool
		wantErr bool
	}{
		{name: "q", stdin: "q"},
		{name: "Ctrl-C", stdin: "\x03"},
		{name: "Ctrl-D", stdin: "\x04"},
		{name: "end of input, manual", stdin: "", manual: true},
		{name: "signal", cancel: true},
		{name: "run error", fail: true, wantErr: true},
		{name: "panic", panics: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyWorkbook(t)
			var stdin io.Reader = strings.NewReader(tc.stdin)
			if tc.cancel {
				// Input that never comes, so that only the context can end it.
				r, pw := io.Pipe()
				defer pw.Close()
				stdin = r
			}
			w, f, out := testBenchReading(t, root, stdin)
			term := &fakeTerminal{}
			w.term = term
			f.panics = tc.panics
			if tc.fail {
				f.fail = errors.New("go test: no such file")
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				go func() {
					waitForText(t, out, "Keys:", 1)
					cancel()
				}()
			}
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil && !tc.panics {
						panic(p)
					}
				}()
				err = w.watch(ctx, "01-size-bar", tc.manual)
			}()
			if (err != nil) != tc.wantErr {
				t.Errorf("watch: %v", err)
			}
			if term.raws != 1 || term.restores != 1 {
				t.Errorf("raw mode entered %d times, left %d times; want once each", term.raws, term.restores)
			}
		})
	}
}

// TestWatchWithoutRawMode: a terminal that refuses raw mode leaves watch to
// read lines.
func TestWatchWithoutRawMode(t *testing.T) {
	root := copyWorkbook(t)
	var errOut syncbuf.Buffer
	w, f, out := testBench(t, root, "n\nq\n")
	w.errw = &errOut
	w.term = &fakeTerminal{fail: errors.New("inappropriate ioctl for device")}
	if err := w.watch(context.Background(), "01-size-bar", true); err != nil {
		t.Fatal(err)
	}
	if len(f.runs) != 2 || !strings.Contains(errOut.String(), "type each key and then Enter") || !strings.Contains(out.String(), "type h (a hint)") {
		t.Errorf("ran %v; stderr %q", f.runs, errOut.String())
	}
}

func TestKeys(t *testing.T) {
	for b, want := range map[byte]key{'h': keyHint, 'N': keyNext, 'q': keyQuit, 0x03: keyQuit, 0x04: keyQuit, '\r': keyRun, '\n': keyRun, 'x': keyOther, 0x1b: keyOther} {
		if got := rawKey(b); got != want {
			t.Errorf("rawKey(%q) = %d, want %d", b, got, want)
		}
	}
	for line, want := range map[string]key{"h\n": keyHint, " next \n": keyNext, "Q\r\n": keyQuit, "quit": keyQuit, "\n": keyRun, "hq\n": keyOther} {
		if got := lineKey(line); got != want {
			t.Errorf("lineKey(%q) = %d, want %d", line, got, want)
		}
	}
}
