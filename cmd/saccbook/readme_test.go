package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/workbook"
)

// The README is what a learner pastes first, so every command in it is run
// here, as the learner would run it, and what the README shows of its output
// is checked against what it really prints:
//
//   - every line of a ```sh block is a command (a "# …" after it is a comment,
//     as in the shell); `saccbook …` and `go run ./cmd/saccbook …` are run in
//     this process, with the workbook commands pointed at a copy of the book;
//     a heredoc (<<'EOF' … EOF) or `printf '…' |` before them is their input;
//   - a ```text block right after a ```sh block of one command is that
//     command's output, line for line ("..." marks a cut);
//   - a bare ``` block right after a ```sh block is an excerpt of the output of
//     that block's commands: its lines appear there, in order;
//   - a bare ``` block whose first line is "$ COMMAND" is a transcript: the
//     command, then its output ("..." marks a cut).

// readmeExit lists the README's commands that exit non-zero when run as this
// test runs them, on a fresh copy of the book with no terminal, with why and
// with what they must say about it.
var readmeExit = map[string]struct {
	code int
	says string
}{
	// The stub fails until the learner solves it, and check says so in its
	// exit status.
	"check 01-find-device": {1, "tests fail"},
	// No terminal here: solution will not show an unsolved exercise without --yes.
	"solution 01-find-device": {1, "saccbook solution 01-find-device --yes shows it"},
	// reset had nothing to do on the fresh copy, so there is no backup yet.
	"restore 01-find-device": {1, "no backup of 01-find-device"},
	// no-cq-head is none of hunt 3's candidates: whatever the variant, the bug
	// part is wrong, and submit says so in its exit status.
	"hunt submit 3 --bug no-cq-head --event 150": {1, "not no-cq-head"},
}

// readmeNotRun are the commands the test knows and does not run: the test
// suites themselves, and the fuzzers, which run for a minute each.
var readmeNotRun = []string{"go test ", "node --test "}

// workbookCommands take --root, which the test points at its copy of the book.
var workbookCommands = []string{"list", "check", "hint", "watch", "solution", "reset", "restore"}

type fence struct {
	info  string // "sh", "text" or ""
	lines []string
	line  int // where it starts in README.md
}

func fences(md string) []fence {
	var out []fence
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		info, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		f := fence{info: strings.TrimSpace(info), line: i + 1}
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			f.lines = append(f.lines, lines[i])
		}
		out = append(out, f)
	}
	return out
}

// shellCommand is one command line of a ```sh block.
type shellCommand struct {
	text  string   // as written, without the comment
	words []string // after quote removal
	stdin string   // from a heredoc or a printf pipe
}

// shellCommands reads a ```sh block: one command a line, "# …" comments, a
// heredoc's lines as the input of the command before them.
func shellCommands(t *testing.T, lines []string) []shellCommand {
	t.Helper()
	var out []shellCommand
	for i := 0; i < len(lines); i++ {
		text := stripComment(lines[i])
		if text == "" {
			continue
		}
		c := shellCommand{text: text}
		if pre, post, ok := strings.Cut(text, "|"); ok {
			w := shellWords(t, pre)
			if len(w) != 2 || w[0] != "printf" {
				t.Fatalf("README: %q: only printf '…' | may stand before a command", text)
			}
			c.stdin = printfText(w[1])
			text = post
		}
		if pre, tag, ok := strings.Cut(text, "<<"); ok {
			tag = strings.Trim(strings.TrimSpace(tag), "'")
			var body []string
			for i++; i < len(lines) && lines[i] != tag; i++ {
				body = append(body, lines[i])
			}
			if i == len(lines) {
				t.Fatalf("README: the heredoc of %q has no %s line", c.text, tag)
			}
			c.stdin = strings.Join(body, "\n") + "\n"
			text = pre
		}
		c.words = shellWords(t, text)
		out = append(out, c)
	}
	return out
}

// stripComment removes a "# …" comment: a # at the start or after a space,
// outside quotes.
func stripComment(line string) string {
	quote := byte(0)
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return strings.TrimSpace(line[:i])
		}
	}
	return strings.TrimSpace(line)
}

// shellWords splits a command into words, removing single and double quotes.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("README: unbalanced quote in %q", s)
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// printfText is what printf prints for a format without % verbs.
func printfText(format string) string {
	return strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`).Replace(format)
}

// saccbookArgs returns the arguments of a saccbook command, as the installed
// command or through go run; false for any other command.
func saccbookArgs(words []string) ([]string, bool) {
	switch {
	case len(words) >= 1 && words[0] == "saccbook":
		return words[1:], true
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/saccbook":
		return words[3:], true
	}
	return nil, false
}

func TestREADMECommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's commands, go test among them")
	}
	src, err := workbook.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(src, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	book := copyWorkbook(t)
	var last []string // the outputs of the last ```sh block's commands
	ran := 0
	for _, f := range fences(string(md)) {
		where := func(what string) string { return "README.md:" + strconv.Itoa(f.line) + ": " + what }
		switch {
		case f.info == "sh":
			last = nil
			for _, c := range shellCommands(t, f.lines) {
				out, ok := runREADMECommand(t, src, book, c, where(c.text))
				if ok {
					ran++
				}
				last = append(last, out)
			}
		case f.info == "" && len(f.lines) > 0 && strings.HasPrefix(f.lines[0], "$ "):
			cs := shellCommands(t, []string{strings.TrimPrefix(f.lines[0], "$ ")})
			out, _ := runREADMECommand(t, src, book, cs[0], where(cs[0].text))
			ran++
			matchLines(t, where(cs[0].text), f.lines[1:], out)
			last = nil
		case f.info == "text" && len(last) == 1:
			matchLines(t, where("the output of the command above"), f.lines, last[0])
			last = nil
		case f.info == "" && last != nil:
			excerpt(t, where("an excerpt of the output of the commands above"), f.lines, strings.Join(last, "\n"))
			last = nil
		default:
			t.Errorf("%s a ```%s block this test does not know how to check", where(""), f.info)
		}
	}
	if ran < 10 {
		t.Errorf("only %d of the README's commands ran", ran)
	}
}

// runREADMECommand runs one command of the README and checks its exit status;
// it returns what the command printed on standard output and whether it ran.
func runREADMECommand(t *testing.T, src, book string, c shellCommand, where string) (string, bool) {
	t.Helper()
	if slices.Equal(c.words, []string{"go", "install", "./cmd/saccbook"}) {
		// Installing is not this test's business; that the package is a
		// command, at that path, is.
		out, err := exec.Command("go", "list", "-C", src, "-f", "{{.Name}}", "./cmd/saccbook").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "main" {
			t.Errorf("%s: go list: %v %s", where, err, out)
		}
		return "", false
	}
	args, ok := saccbookArgs(c.words)
	if !ok {
		for _, p := range readmeNotRun {
			if strings.HasPrefix(c.text, p) {
				return "", false
			}
		}
		t.Errorf("%s: a command this test does not know how to run", where)
		return "", false
	}
	key := strings.Join(args, " ")
	stdin := c.stdin
	switch {
	case len(args) > 0 && (args[0] == "serve" || args[0] == "classroom" || args[0] == "join"):
		// serve and classroom run until stopped, join needs a class being
		// served: check that the command and its flags exist.
		args = append(args, "-h")
	case len(args) > 0 && (args[0] == "hunt" || args[0] == "adversary" || slices.Contains(args, "--hunt")):
		// The hunts and the adversary levels keep their key and records in
		// the copy's workspace.
		args = append(args, "--root", book)
	case len(args) > 0 && slices.Contains(workbookCommands, args[0]):
		args = append(args, "--root", book)
		if args[0] == "watch" && stdin == "" {
			stdin = "q\n" // without a terminal a key is a line: q quits after the first run
		}
	}
	var out, errOut bytes.Buffer
	code := dispatch(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	want := readmeExit[key]
	if code != want.code || (want.says != "" && !strings.Contains(out.String()+errOut.String(), want.says)) {
		t.Errorf("%s: exit status %d, want %d and %q:\nstdout:\n%s\nstderr:\n%s", where, code, want.code, want.says, out.String(), errOut.String())
	}
	return out.String(), true
}

// excerpt checks that every line of want (but "...") is a line of got, in
// order, spaces aside.
func excerpt(t *testing.T, what string, want []string, got string) {
	t.Helper()
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	have := strings.Split(got, "\n")
	at := 0
	for _, w := range want {
		if norm(w) == "..." || norm(w) == "" {
			continue
		}
		i := slices.IndexFunc(have[at:], func(h string) bool { return norm(h) == norm(w) })
		if i < 0 {
			t.Errorf("%s: %q is not in the output (after line %d)", what, w, at)
			return
		}
		at += i + 1
	}
}

// matchLines checks that want, cut at "..." lines into runs, appears in got:
// each run as consecutive lines, the runs in order, spaces aside.
func matchLines(t *testing.T, what string, want []string, got string) {
	t.Helper()
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	var have []string
	for _, l := range strings.Split(got, "\n") {
		have = append(have, norm(l))
	}
	var runs [][]string
	cur := []string{}
	for _, l := range want {
		if norm(l) == "..." {
			runs = append(runs, cur)
			cur = []string{}
			continue
		}
		cur = append(cur, norm(l))
	}
	runs = append(runs, cur)
	at := 0
	for _, run := range runs {
		if len(run) == 0 {
			continue
		}
		found := -1
		for i := at; i+len(run) <= len(have); i++ {
			if slices.Equal(have[i:i+len(run)], run) {
				found = i
				break
			}
		}
		if found < 0 {
			t.Errorf("%s: these lines are not in the output (after line %d), in this order:\n%s\noutput:\n%s",
				what, at, strings.Join(run, "\n"), got)
			return
		}
		at = found + len(run)
	}
}
