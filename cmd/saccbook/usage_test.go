package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/workbook"
)

// bareWorkspace is a workspace in which nothing has run yet: no hunt key, no
// progress file.
func bareWorkspace(t *testing.T) string {
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

// TestMistypedCommandsWriteNothing: a command line that is refused as usage
// (status 2) makes no file — not the hunt key a first real hunt command would
// make, not a course — and says what to type.
func TestMistypedCommandsWriteNothing(t *testing.T) {
	root := bareWorkspace(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"hunt", "start"}, "hunt start wants one hunt number"},
		{[]string{"hunt", "start", "three"}, `hunt number "three"`},
		{[]string{"hunt", "start", "3", "4"}, "hunt start wants one hunt number"},
		{[]string{"hunt", "submit", "3"}, "--bug NAME and --event SEQ"},
		{[]string{"hunt", "submit", "--bug", "no-cq-head", "--event", "5"}, "hunt submit wants one hunt number"},
		{[]string{"hunt", "list", "3"}, `unexpected argument "3"`},
		{[]string{"hunt", "key", "--learner", ""}, "--learner wants an id"},
	} {
		code, _, errOut := runCLI(t, "", append(tc.args, "--root", root)...)
		if code != 2 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "Usage: saccbook hunt") {
			t.Errorf("%v: code %d, stderr %q; want 2 and %q with the usage", tc.args, code, errOut, tc.want)
		}
	}
	// An unknown hunt is no usage error (status 1), but it makes no key either.
	for _, args := range [][]string{{"hunt", "start", "99"}, {"hunt", "submit", "99", "--bug", "no-cq-head", "--event", "5"},
		{"run", "--hunt", "99"}, {"monitor", "--hunt", "99"}} {
		code, _, errOut := runCLI(t, "", append(args, "--root", root)...)
		if code != 1 || !strings.Contains(errOut, "no hunt 99") || !strings.Contains(errOut, "saccbook hunt list") {
			t.Errorf("%v: code %d, stderr %q", args, code, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(root, workbook.HuntKeyFile)); err == nil {
		t.Error("a refused hunt command made the hunt key")
	}
	if code, _, errOut := runCLI(t, "", "hunt", "start", "3", "--root", root); code != 0 || !strings.Contains(errOut, "made your hunt key") {
		t.Errorf("hunt start 3 in a fresh workspace: code %d, stderr %q", code, errOut)
	}

	course := filepath.Join(t.TempDir(), "course")
	missing := filepath.Join(t.TempDir(), "nope.pem")
	code, out, errOut := runCLI(t, "", "classroom", "--addr", "127.0.0.1:0", "--course", course, "--tls-cert", missing, "--tls-key", missing)
	if code != 1 || !strings.Contains(errOut, "nope.pem") || strings.Contains(out+errOut, "token=") {
		t.Errorf("classroom with a missing certificate: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(course); err == nil {
		t.Error("classroom with a missing certificate made the course")
	}

	code, _, errOut = runCLI(t, "", "help", "frobnicate")
	if code != 2 || !strings.Contains(errOut, "saccbook help lists them") {
		t.Errorf("help frobnicate: code %d, stderr %q", code, errOut)
	}
}

// TestAdversaryPlayClosedInput: standard input that ends before the game does
// stops it with status 1 and says how to go on from there.
func TestAdversaryPlayClosedInput(t *testing.T) {
	root := bareWorkspace(t)
	code, out, _ := runCLI(t, "", "adversary", "play", "1", "--root", root)
	if code != 1 || !strings.Contains(out, "stopped before the first choice") {
		t.Errorf("no input: code %d, tail %q", code, tail(out))
	}
	code, out, _ = runCLI(t, "1\n", "adversary", "play", "1", "--root", root)
	if code != 1 || !strings.Contains(out, "stopped after 1 choices, the game not over: go on with --schedule 1") {
		t.Errorf("one choice: code %d, tail %q", code, tail(out))
	}
}

func tail(s string) string {
	if len(s) > 200 {
		return s[len(s)-200:]
	}
	return s
}

// TestInterruptedSaysSo: a command stopped by Ctrl-C fails (status 1) and
// says it was interrupted, not "context canceled".
func TestInterruptedSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := dispatch(ctx, []string{"qtest"}, strings.NewReader("readl 0xb0018000\n"), &out, &errb)
	if code != 1 || errb.String() != "saccbook qtest: interrupted\n" {
		t.Errorf("qtest after Ctrl-C: code %d, stderr %q", code, errb.String())
	}
}
