package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/saccbook/saccbook/sacc/adversary"
	"github.com/saccbook/saccbook/workbook"
)

const adversaryHelp = `Adversary mode: you are the memory system. Each level is a short driver from the
book and a device; at every step you pick what happens next — which buffered store
drains, when a posted write (the doorbell, IRQ_ACK) lands, when the CPU performs a
load early, when the device fetches, writes or signals — and you win by breaking
the driver's invariant.

  saccbook adversary list              every level, with your progress
  saccbook adversary play LEVEL        play it: numbered choices, the state after each
  saccbook adversary play LEVEL --schedule 2,1,1
                                       replay those choices first (then carry on from stdin)
  saccbook adversary solve LEVEL [--bound N]
                                       search every schedule of up to N choices: the
                                       shortest that breaks the driver, or the proof
                                       that none does

LEVEL is a level's number or name. play reads one choice number per line from
standard input (q ends the game); its exit status is 0 when you broke the driver
and 1 when you did not. Some levels are correct drivers that cannot be broken: the
solver proves it, and the level's record says "proved" once you have run it.

Your progress (won, proved, tried) is kept in exercises/.saccbook-progress.json,
beside the bug hunts' scores, when you play inside the workspace. saccbook serve
has the same levels at /adversary, played by clicking; a game you finish there is
recorded too.`

func adversaryCommand() command {
	return command{
		name:    "adversary",
		summary: "adversary mode: play the memory system and break a driver",
		usage:   "list | play LEVEL [--schedule N,N,…] | solve LEVEL [--bound N]",
		help:    adversaryHelp,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			root := rootFlag(fs)
			schedule := fs.String("schedule", "", "play: the choices to make first, 1-based, comma-separated")
			bound := fs.Int("bound", adversary.DefaultBound, "solve: the longest schedule to try, in choices")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) == 0 {
					return usageError("which? list, play or solve")
				}
				sub := args[0]
				set := map[string]bool{}
				fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
				switch {
				case sub != "list" && sub != "play" && sub != "solve":
					return usageError("unknown adversary command %q: want list, play or solve", sub)
				case set["schedule"] && sub != "play":
					return usageError("--schedule goes with adversary play")
				case set["bound"] && sub != "solve":
					return usageError("--bound goes with adversary solve")
				case sub == "list" && len(args) > 1:
					return usageError("unexpected argument %q", args[1])
				case sub != "list" && len(args) != 2:
					return usageError("adversary %s wants one level (a number or a name; saccbook adversary list)", sub)
				}
				rec, err := openRecord(*root)
				if err != nil {
					return err
				}
				rec.notes = e.stderr
				if sub == "list" {
					return adversaryList(e, rec)
				}
				l, err := adversary.Lookup(args[1])
				if err != nil {
					return err
				}
				if sub == "solve" {
					if *bound < 1 || *bound > adversary.MaxSchedule {
						return usageError("--bound %d: want 1 to %d", *bound, adversary.MaxSchedule)
					}
					return adversarySolve(e, rec, l, *bound)
				}
				first, err := adversary.ParseSchedule(*schedule)
				if err != nil {
					return usageError("--schedule: %v", err)
				}
				return adversaryPlay(ctx, e, rec, l, first)
			}
		},
	}
}

// record is where the adversary levels' progress goes: the workspace's
// progress file, or nowhere when saccbook runs outside a workspace.
type record struct {
	root  string // "" outside a workspace
	now   func() time.Time
	notes io.Writer // where a report to the class says it was not sent; nil: nowhere
}

// openRecord finds the workspace (root, or the one around the current
// directory) and checks that its progress file loads, so that a corrupt file
// is reported before a game rather than lost after it.
func openRecord(root string) (*record, error) {
	r := &record{now: time.Now}
	found, err := findRoot(root)
	if err != nil {
		if root != "" {
			return nil, err
		}
		return r, nil // outside a workspace: play, but keep no record
	}
	if fi, err := os.Stat(filepath.Join(found, "exercises")); err != nil || !fi.IsDir() {
		if root != "" {
			return nil, fmt.Errorf("%s has no exercises directory: your progress is kept there", root)
		}
		return r, nil
	}
	if _, err := workbook.LoadProgress(found); err != nil {
		return nil, err
	}
	r.root = found
	return r, nil
}

// update changes level's record in one step: load the progress file as it is
// now (a hunt may have been submitted meanwhile), change it, save it; then, if
// the workspace has joined a class, report the level's record to it.
func (r *record) update(level string, change func(p *workbook.Progress)) error {
	if r.root == "" {
		return nil
	}
	p, err := workbook.LoadProgress(r.root)
	if err != nil {
		return err
	}
	change(p)
	if err := p.Save(r.root); err != nil {
		return err
	}
	notes := r.notes
	if notes == nil {
		notes = io.Discard
	}
	toClass(context.Background(), notes, r.root, adversaryReport(level, p.AdversaryOf(level), r.now()))
	return nil
}

func (r *record) progress() (*workbook.Progress, error) {
	if r.root == "" {
		return &workbook.Progress{}, nil
	}
	return workbook.LoadProgress(r.root)
}

func adversaryList(e *env, rec *record) error {
	p, err := rec.progress()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "LEVEL\tNAME\tCPU\tCAN BREAK\tYOU\tTITLE\n")
	won, proved := 0, 0
	for _, l := range adversary.Levels() {
		a := p.AdversaryOf(l.Name)
		status := string(a.Status)
		switch a.Status {
		case workbook.AdversaryWon:
			won++
			status = fmt.Sprintf("won in %d", a.Choices)
		case workbook.AdversaryProved:
			proved++
		}
		fmt.Fprintf(tw, "%5d\t%s\t%s\t%s\t%s\t%s\n", l.Number, l.Name, l.CPU.Name, canBreak(l), status, l.Title)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "\n%d won, %d proved, of %d levels. saccbook adversary play LEVEL plays one.\n", won, proved, len(adversary.Levels()))
	if rec.root == "" {
		fmt.Fprintf(e.stdout, "(outside a workspace: no progress is recorded)\n")
	}
	return nil
}

// canBreak says whether some schedule breaks the level: the level states it,
// and the solver's tests hold every level to its statement.
func canBreak(l *adversary.Level) string {
	if l.Breakable {
		return "yes"
	}
	return "no"
}

func adversarySolve(e *env, rec *record, l *adversary.Level, bound int) error {
	t0 := time.Now()
	r := l.Solve(bound)
	elapsed := time.Since(t0)
	w := e.stdout
	fmt.Fprintf(w, "Level %d, %s: %s\n", l.Number, l.Name, l.Title)
	fmt.Fprintf(w, "invariant: %s\n\n", l.Invariant)
	if r.Broken() {
		fmt.Fprintf(w, "The shortest schedule that breaks it, %d choices (%d states explored, %s):\n\n", len(r.Schedule), r.States, elapsed.Round(time.Microsecond))
		_, steps, err := l.Replay(r.Schedule)
		if err != nil {
			return err
		}
		for i, st := range steps {
			fmt.Fprintf(w, "  %2d. choose %d: %s\n", i+1, r.Schedule[i], st.Choice.Text)
		}
		fmt.Fprintf(w, "\nbroken: %s\n", r.Why)
		fmt.Fprintf(w, "replay it: saccbook adversary play %s --schedule %s\n", l.Name, adversary.FormatSchedule(r.Schedule))
	} else {
		fmt.Fprintf(w, "%s (%s).\n", capitalize(r.Summary()), elapsed.Round(time.Microsecond))
		if l.Breakable {
			fmt.Fprintf(w, "This level can be broken: a longer bound finds it.\n")
		}
	}
	fmt.Fprintf(w, "\n%s\n", wrap(l.Lesson, 80))
	return rec.update(l.Name, func(p *workbook.Progress) { p.RecordSolve(l.Name, !r.Broken() && r.Exhausted) })
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// adversaryPlay plays a level: the choices of first, then one per line of
// standard input, printing the state and the open choices before each.
func adversaryPlay(ctx context.Context, e *env, rec *record, l *adversary.Level, first []int) error {
	w := e.stdout
	fmt.Fprintf(w, "Level %d: %s (%s)\n\n%s\n\n", l.Number, l.Title, l.CPU.Name, wrap(l.Story, 80))
	fmt.Fprintf(w, "The driver's invariant: %s.\n%s\n", l.Invariant, l.Claim())
	if _, _, err := l.Replay(first); err != nil {
		return fmt.Errorf("--schedule: %v", err)
	}
	s := l.Start()
	in := bufio.NewScanner(e.stdin)
	played := []int{}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		v := l.ViewOf(&s, len(played))
		fmt.Fprintf(w, "\n%s", v.Text())
		if v.Over {
			break
		}
		fmt.Fprintf(w, "choices:\n")
		for i, c := range v.Choices {
			fmt.Fprintf(w, "  %d. %s\n", i+1, c)
		}
		var k int
		if len(played) < len(first) {
			k = first[len(played)]
			fmt.Fprintf(w, "choice> %d   (from --schedule)\n", k)
		} else {
			fmt.Fprintf(w, "choice> ")
			var err error
			if k, err = readChoice(in, len(v.Choices)); err != nil {
				if errors.Is(err, io.EOF) {
					if len(played) == 0 {
						fmt.Fprintf(w, "\nstopped before the first choice, the game not over\n")
					} else {
						fmt.Fprintf(w, "\nstopped after %d choices, the game not over: go on with --schedule %s\n", len(played), adversary.FormatSchedule(played))
					}
					return exitStatus(1)
				}
				fmt.Fprintf(w, "%v\n", err)
				continue
			}
		}
		cs := l.Choices(&s)
		l.Apply(&s, cs[k-1])
		played = append(played, k)
	}
	v := l.ViewOf(&s, len(played))
	fmt.Fprintf(w, "\n%s\n", v.Verdict)
	fmt.Fprintf(w, "%s\nyour schedule: %s\n", wrap(l.Lesson, 80), adversary.FormatSchedule(played))
	if err := rec.update(l.Name, func(p *workbook.Progress) { p.RecordPlay(l.Name, v.Won, len(played), rec.now()) }); err != nil {
		return err
	}
	if !v.Won {
		return exitStatus(1)
	}
	return nil
}

// errQuit is the learner ending the game.
var errQuit = io.EOF

// readChoice reads one choice from the learner: a number from 1 to n, or q.
func readChoice(in *bufio.Scanner, n int) (int, error) {
	if !in.Scan() {
		if err := in.Err(); err != nil {
			return 0, err
		}
		return 0, io.EOF
	}
	text := strings.TrimSpace(in.Text())
	if text == "q" || text == "quit" {
		return 0, errQuit
	}
	sched, err := adversary.ParseSchedule(text)
	if err != nil || len(sched) != 1 || sched[0] > n {
		return 0, fmt.Errorf("%q: type a choice from 1 to %d, or q", text, n)
	}
	return sched[0], nil
}

// servedRecords is the workspace's adversary record, as the server's pages
// show it and add the browser's games to it.
type servedRecords struct{ root string }

func (r servedRecords) RecordPlay(name string, won bool, choices int) error {
	rec := &record{root: r.root, now: time.Now}
	return rec.update(name, func(p *workbook.Progress) { p.RecordPlay(name, won, choices, rec.now()) })
}

func (r servedRecords) AdversaryStatus() (map[string]string, error) {
	p, err := workbook.LoadProgress(r.root)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, a := range p.Adversary {
		out[name] = string(a.Status)
	}
	return out, nil
}
