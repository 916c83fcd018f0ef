package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/saccbook/saccbook/sacc/hunt"
	"github.com/saccbook/saccbook/workbook"
)

const huntHelp = `The bug hunts: a run with one secret bug from the catalog (saccbook quirks), a
story with its symptom, and you find the bug with the trace, the monitor and the
browser, then name it.

  saccbook hunt list                  every hunt, with your status and score
  saccbook hunt start N               hunt N's story, its symptom, the commands to investigate
  saccbook hunt submit N --bug NAME --event SEQ
                                      your answer: the bug's catalog name, and the first event
                                      at which your run differs from the same run without the bug
  saccbook hunt key [--learner ID] [--import FILE]
                                      your key and learner id; join a course with its key file
  saccbook hunt answer N --key FILE --learner ID
                                      the expected answer, for instructors

Investigate with the same run everywhere: saccbook run --hunt N (the trace, every
event numbered), saccbook monitor --hunt N (step, step back, inspect), and
saccbook serve, whose page /hunts/N has the run in a live widget. None of them
names the bug or offers the run without it to compare.

Every learner gets their own variant: which bug, and the run's parameters (ring
sizes, job sizes, the seed, costs), come from HMAC-SHA256 of the key, the learner
id and the hunt number. Without a course a key is made on first use, in
exercises/.saccbook-hunt-key (readable by you only, ignored by git), for your login
name. A course hands out a key file: saccbook hunt key --import FILE --learner ID.

Scoring: a hunt is worth 10 points; each wrong submission before it is solved
costs 2, and a solved hunt scores at least 2. Once solved, later submissions are
answered but change nothing. An unknown hunt or bug, or an event that is no
number, is refused and costs nothing. The record is in
exercises/.saccbook-progress.json. Exit status of submit: 0 when solved, 1 when
not.

What this is not: a secure exam. You have the key and the source, so you could
compute your variant, run it with and without each candidate bug and compare the
traces; the hunts' source lists each hunt's candidates, and the grader's "too
early" and "too late" would bisect an event number. The hunts are there to teach
you to read a machine; those shortcuts teach nothing.`

func huntCommand() command {
	return command{
		name:    "hunt",
		summary: "bug hunts: find the secret bug behind a symptom, graded",
		usage:   "list | start N | submit N --bug NAME --event SEQ | key | answer N --key FILE --learner ID",
		help:    huntHelp,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			root := rootFlag(fs)
			bug := fs.String("bug", "", "submit: the bug's catalog name (saccbook quirks)")
			event := fs.String("event", "", "submit: the sequence number of the first event where the bug shows")
			learner := fs.String("learner", "", "key: your learner id; answer: whose answer")
			keyFile := fs.String("key", "", "answer: the course key file")
			importFile := fs.String("import", "", "key: take in a course's key file")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) == 0 {
					return usageError("which? list, start, submit, key or answer")
				}
				set := map[string]bool{}
				fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
				allowed := map[string][]string{
					"list": {"root"}, "start": {"root"}, "submit": {"root", "bug", "event"},
					"key": {"root", "learner", "import"}, "answer": {"learner", "key"},
				}
				sub := args[0]
				ok, known := allowed[sub]
				if !known {
					return usageError("unknown hunt command %q: want list, start, submit, key or answer", sub)
				}
				for _, name := range slices.Sorted(maps.Keys(set)) {
					if !slices.Contains(ok, name) {
						return usageError("--%s does not go with hunt %s", name, sub)
					}
				}
				number := func() (int, error) {
					if len(args) != 2 {
						return 0, usageError("hunt %s wants one hunt number", sub)
					}
					n, err := strconv.Atoi(args[1])
					if err != nil || n < 1 {
						return 0, usageError("hunt number %q: want a number such as 3 (saccbook hunt list)", args[1])
					}
					return n, nil
				}
				if (sub == "list" || sub == "key") && len(args) > 1 {
					return usageError("unexpected argument %q", args[1])
				}
				switch sub {
				case "answer":
					n, err := number()
					if err != nil {
						return err
					}
					return huntAnswer(e, n, *keyFile, *learner)
				case "key":
					if set["learner"] && *learner == "" {
						return usageError("--learner wants an id: the one your course knows you by, or any name of yours")
					}
					return huntKey(e, *root, *learner, *importFile)
				}
				// The command line is checked before the desk opens: opening
				// it makes the workspace's key on first use, and a mistyped
				// command should leave no file behind.
				n := 0
				if sub != "list" {
					var err error
					if n, err = number(); err != nil {
						return err
					}
				}
				if sub == "submit" && (!set["bug"] || !set["event"]) {
					return usageError("hunt submit wants both --bug NAME and --event SEQ")
				}
				if sub != "list" {
					if _, err := hunt.Lookup(n); err != nil {
						return err
					}
				}
				d, err := openDesk(*root)
				if err != nil {
					return err
				}
				d.announce(e.stderr)
				switch sub {
				case "list":
					return huntList(e, d)
				case "start":
					return huntStart(e, d, n)
				default: // submit
					return huntSubmit(e, d, n, *bug, *event)
				}
			}
		},
	}
}

func huntList(e *env, d *huntDesk) error {
	p, err := d.progress()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "HUNT\tSTATUS\tSCORE\tSYMPTOM\n")
	solved, points := 0, 0
	for _, h := range hunt.Catalogue() {
		rec := p.HuntStatusOf(h.Number)
		score := fmt.Sprintf("worth %d", rec.Worth())
		if rec.Status == workbook.HuntSolved {
			score = fmt.Sprintf("%d/%d", rec.Score, workbook.HuntWorth)
			solved++
			points += rec.Score
		}
		fmt.Fprintf(tw, "%4d\t%s\t%s\t%s\n", h.Number, rec.Status, score, h.Title)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	n := len(hunt.Catalogue())
	fmt.Fprintf(e.stdout, "\n%d of %d solved, %d of %d points; learner %s. saccbook hunt start N begins one.\n",
		solved, n, points, n*workbook.HuntWorth, d.key.Learner)
	return nil
}

func huntStart(e *env, d *huntDesk, n int) error {
	h, err := d.start(n)
	if err != nil {
		return err
	}
	p, err := d.progress()
	if err != nil {
		return err
	}
	rec := p.HuntStatusOf(n)
	w := e.stdout
	fmt.Fprintf(w, "Hunt %d: %s\n\n%s\n\n", n, h.Title, wrap(h.Story, 80))
	fmt.Fprintf(w, "The symptom: %s.\n\n", h.Symptom)
	fmt.Fprintf(w, "Your run is scenario %s, with one bug of the catalog switched on and parameters\n", h.Scenario)
	fmt.Fprintf(w, "of your own (learner %s). It is the same run every time, wherever you look at it:\n\n", d.key.Learner)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range [][2]string{
		{fmt.Sprintf("saccbook run --hunt %d", n), "the trace, every event with its number, and what the run reported"},
		{fmt.Sprintf("saccbook run --hunt %d --dmesg", n), "the same, with the kernel log (when the run boots a kernel)"},
		{fmt.Sprintf("saccbook monitor --hunt %d", n), "stop, step, step back, and inspect the machine at any event"},
		{"saccbook serve --open", fmt.Sprintf("the book in a browser: /hunts/%d has the run in a live widget", n)},
		{"saccbook quirks", "the catalog the bug is one of"},
		{"saccbook run -h", "what each scenario does; " + h.Scenario + "'s source is in sacc/scenario"},
	} {
		fmt.Fprintf(tw, "  %s\t%s\n", c[0], c[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nWhen you know: saccbook hunt submit %d --bug NAME --event SEQ\n", n)
	fmt.Fprintf(w, "NAME is the bug's catalog name; SEQ is the first event of your run that differs from the\n")
	fmt.Fprintf(w, "same run without the bug. ")
	if rec.Status == workbook.HuntSolved {
		fmt.Fprintf(w, "You solved this hunt already: %d of %d points.\n", rec.Score, workbook.HuntWorth)
	} else {
		fmt.Fprintf(w, "Worth %d points now; each wrong answer costs %d.\n", rec.Worth(), workbook.HuntPenalty)
	}
	return nil
}

func huntSubmit(e *env, d *huntDesk, n int, bug, event string) error {
	s, err := d.submit(n, bug, event)
	if err != nil {
		return err
	}
	for _, l := range s.lines() {
		fmt.Fprintln(e.stdout, l)
	}
	if !s.verdict.Solved() {
		return exitStatus(1)
	}
	return nil
}

// huntKey shows the workspace's key and learner id, changes the id, or takes
// in a course's key file.
func huntKey(e *env, root, learner, importFile string) error {
	d, err := openDesk(root)
	if err != nil && importFile == "" {
		return err
	}
	if err != nil {
		// A key file that does not load may be replaced by a course's one: find
		// the workspace without it.
		if root, err = findRoot(root); err != nil {
			return err
		}
		d = &huntDesk{root: root}
	}
	path := filepath.Join(d.root, workbook.HuntKeyFile)
	switch {
	case importFile != "":
		k, err := workbook.ReadHuntKey(importFile)
		if err != nil {
			return err
		}
		if learner != "" {
			k.Learner = learner
		}
		if k.Learner == "" {
			return usageError("the course key has no learner id: add --learner ID (the one your course knows you by)")
		}
		k.Course = true
		if err := workbook.SaveHuntKey(path, k); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "took in the course key from %s, for learner %q: your hunts' variants are the course's now (your scores stay)\n", importFile, k.Learner)
		return nil
	case learner != "":
		if err := workbook.ValidLearner(learner); err != nil {
			return err
		}
		k := *d.key
		k.Learner = learner
		if err := workbook.SaveHuntKey(path, &k); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "learner id is now %q: your hunts' variants change with it (your scores stay)\n", learner)
		return nil
	}
	d.announce(e.stderr)
	sum := sha256.Sum256(d.key.Key)
	origin := "made on this machine"
	if d.key.Course {
		origin = "a course's key"
	}
	fmt.Fprintf(e.stdout, "key file     %s (%s; fingerprint %s)\n", workbook.HuntKeyFile, origin, hex.EncodeToString(sum[:6]))
	fmt.Fprintf(e.stdout, "learner id   %s\n", d.key.Learner)
	fmt.Fprintf(e.stdout, "Your variants come from both. Keep the file: a new key or id gives new variants.\n")
	return nil
}

// findRoot is the workspace root: root, or the one around the current
// directory.
func findRoot(root string) (string, error) {
	if root != "" {
		return root, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return workbook.FindRoot(wd)
}

// wrap breaks text into lines of at most width bytes, at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	line := 0
	for _, w := range strings.Fields(text) {
		if line > 0 && line+1+len(w) > width {
			b.WriteByte('\n')
			line = 0
		} else if line > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	return b.String()
}

// huntAnswer prints a learner's expected answer from a key file.
func huntAnswer(e *env, n int, keyFile, learner string) error {
	if keyFile == "" || learner == "" {
		return usageError("hunt answer wants --key FILE and --learner ID")
	}
	if err := workbook.ValidLearner(learner); err != nil {
		return err
	}
	k, err := workbook.ReadHuntKey(keyFile)
	if err != nil {
		return err
	}
	h, err := hunt.Lookup(n)
	if err != nil {
		return err
	}
	v := h.For(k.Key, learner)
	a, err := v.Answer()
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "hunt %d, learner %s: --bug %s --event %d\n", n, learner, a.Bug, a.Seq)
	fmt.Fprintf(e.stdout, "  event %d: %s\n", a.Seq, a.Event.String())
	fmt.Fprintf(e.stdout, "  variant %d of %d: scenario %s, %s\n", v.Index+1, h.Space(), h.Scenario, v.Describe())
	return nil
}
