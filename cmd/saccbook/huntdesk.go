package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/saccbook/saccbook/sacc/hunt"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/scenario"
	"github.com/saccbook/saccbook/web"
	"github.com/saccbook/saccbook/web/classroom"
	"github.com/saccbook/saccbook/workbook"
)

// huntDesk is a learner's side of the bug hunts in one workspace: the key and
// learner id their variants come from, and their records in the progress file.
// The hunt commands, run --hunt, monitor --hunt and the server's hunt pages all
// go through one, so a submission is graded and recorded the same way
// everywhere.
type huntDesk struct {
	root string
	key  *workbook.HuntKey
	made bool // the key was made by this desk, on first use
	now  func() time.Time
	// notes is where reporting to the class says what went wrong (set by
	// announce, to the command's standard error).
	notes io.Writer
	// mu makes a submission's load, grade and save one step: the server may
	// take two at once (the command line in another process reloads the file
	// before every change, and the file is replaced in one rename).
	mu sync.Mutex
}

// openDesk opens the hunts of the workspace at root (or the one around the
// current directory), making the learner's key on first use.
func openDesk(root string) (*huntDesk, error) {
	root, err := findRoot(root)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(filepath.Join(root, "exercises")); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s has no exercises directory: the hunts keep their key and your progress there", root)
	}
	k, made, err := workbook.EnsureHuntKey(root, defaultLearner(), nil)
	if err != nil {
		return nil, err
	}
	if k.Learner == "" {
		return nil, fmt.Errorf("%s has no learner id: saccbook hunt key --learner ID", workbook.HuntKeyFile)
	}
	return &huntDesk{root: root, key: k, made: made, now: time.Now, notes: io.Discard}, nil
}

// defaultLearner is the learner id a key made on this machine starts with: the
// user's login name, which stays the same from one run to the next.
func defaultLearner() string {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if name == "" {
		name = os.Getenv("USER")
	}
	// A Windows login is DOMAIN\name; keep the name.
	name = name[strings.LastIndex(name, `\`)+1:]
	if workbook.ValidLearner(name) != nil {
		return "learner"
	}
	return name
}

// announce says, once, that a key was made: the learner should know where it
// is and what it decides.
func (d *huntDesk) announce(w io.Writer) {
	d.notes = w
	if d.made {
		fmt.Fprintf(w, "saccbook: made your hunt key in %s, for learner %q (saccbook hunt key says more)\n", workbook.HuntKeyFile, d.key.Learner)
		d.made = false
	}
}

// variant is the learner's variant of hunt n.
func (d *huntDesk) variant(n int) (hunt.Variant, error) {
	h, err := hunt.Lookup(n)
	if err != nil {
		return hunt.Variant{}, err
	}
	return h.For(d.key.Key, d.key.Learner), nil
}

// progress loads the progress file as it is now.
func (d *huntDesk) progress() (*workbook.Progress, error) { return workbook.LoadProgress(d.root) }

// start marks hunt n started and returns it.
func (d *huntDesk) start(n int) (*hunt.Hunt, error) {
	h, err := hunt.Lookup(n)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p, err := d.progress()
	if err != nil {
		return nil, err
	}
	if rec := p.Hunt(n); rec.Status == workbook.HuntNotStarted {
		rec.Start(d.now())
		if err := p.Save(d.root); err != nil {
			return nil, err
		}
		d.toClass(n, *rec, nil)
	}
	return h, nil
}

// submitted is a graded submission and what it did to the record.
type submitted struct {
	n       int
	sub     hunt.Submission
	verdict hunt.Verdict
	counted bool // it changed the record (the hunt was not solved before)
	record  workbook.HuntProgress
}

// submit grades a submission to hunt n and records it. Input mistakes (an
// unknown hunt or bug, an event that is no number) are *hunt.InputError and
// change nothing; so does a progress file that does not load.
func (d *huntDesk) submit(n int, bug, event string) (*submitted, error) {
	v, err := d.variant(n)
	if err != nil {
		return nil, err
	}
	sub, err := hunt.ParseSubmission(bug, event)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// The progress file first: if it does not load, nothing is graded, so
	// nothing is lost by refusing.
	p, err := d.progress()
	if err != nil {
		return nil, err
	}
	vd, err := v.Grade(sub)
	if err != nil {
		return nil, fmt.Errorf("grade hunt %d: %w", n, err)
	}
	rec := p.Hunt(n)
	counted := rec.Submit(vd.Solved(), d.key.Learner, d.now())
	if counted {
		if err := p.Save(d.root); err != nil {
			return nil, err
		}
		d.toClass(n, *rec, &classroom.Answer{Bug: bug, Event: event})
	}
	return &submitted{n: n, sub: sub, verdict: vd, counted: counted, record: *rec}, nil
}

// lines is what a submission's answer says: the verdict, then the score.
func (s *submitted) lines() []string {
	out := []string{s.verdict.Message(s.sub)}
	r := s.record
	switch {
	case !s.counted:
		out = append(out, fmt.Sprintf("Hunt %d was solved already: this answer changes nothing, your score stays %d of %d.", s.n, r.Score, workbook.HuntWorth))
	case r.Status == workbook.HuntSolved:
		out = append(out, fmt.Sprintf("Hunt %d solved: %d of %d points (%s).", s.n, r.Score, workbook.HuntWorth, wrongCount(r.Wrong)))
	default:
		out = append(out, fmt.Sprintf("−%d: hunt %d is now worth %d of %d points (%s so far).", workbook.HuntPenalty, s.n, r.Worth(), workbook.HuntWorth, wrongCount(r.Wrong)))
	}
	return out
}

func wrongCount(n int) string {
	switch n {
	case 0:
		return "no wrong answer"
	case 1:
		return "1 wrong answer"
	}
	return fmt.Sprintf("%d wrong answers", n)
}

// ---------------------------------------------------------------------------
// The server's view (web.Hunts)

// deskHunts serves the hunt pages from a desk.
type deskHunts struct{ d *huntDesk }

func (h deskHunts) List() ([]web.HuntRow, error) {
	p, err := h.d.progress()
	if err != nil {
		return nil, err
	}
	var rows []web.HuntRow
	for _, x := range hunt.Catalogue() {
		rec := p.HuntStatusOf(x.Number)
		rows = append(rows, web.HuntRow{Hunt: x, Status: string(rec.Status), Score: rec.Score, Worth: rec.Worth(), Max: workbook.HuntWorth, Wrong: rec.Wrong})
	}
	return rows, nil
}

func (h deskHunts) Learner() string { return h.d.key.Learner }

func (h deskHunts) Submit(n int, bug, event string) (web.HuntVerdict, error) {
	s, err := h.d.submit(n, bug, event)
	if err != nil {
		var in *hunt.InputError
		if errors.As(err, &in) {
			return web.HuntVerdict{Problem: in.Msg}, nil
		}
		return web.HuntVerdict{}, err
	}
	return web.HuntVerdict{Lines: s.lines(), Solved: s.verdict.Solved()}, nil
}

// variantOf is the server's way to a hunt's run (web/live builds it).
func (h deskHunts) variantOf(n int) (hunt.Variant, error) { return h.d.variant(n) }

// isSet reports whether the flag was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// huntVariant checks that --hunt N came without a scenario or anything that would
// change the run, and opens the learner's variant of hunt n (marking the hunt
// started).
func huntVariant(fs *flag.FlagSet, n int, root string, args []string, e *env) (hunt.Variant, error) {
	if len(args) > 0 {
		return hunt.Variant{}, usageError("--hunt runs the hunt's own scenario: %q does not go with it", args[0])
	}
	for _, name := range []string{"set", "seed", "cost", "quirks", "ram"} {
		if isSet(fs, name) {
			return hunt.Variant{}, usageError("--%s does not go with --hunt: the hunt's run is built from your variant", name)
		}
	}
	// An unknown hunt is refused before the desk makes the workspace's key.
	if _, err := hunt.Lookup(n); err != nil {
		return hunt.Variant{}, err
	}
	d, err := openDesk(root)
	if err != nil {
		return hunt.Variant{}, err
	}
	d.announce(e.stderr)
	if _, err := d.start(n); err != nil {
		return hunt.Variant{}, err
	}
	return d.variant(n)
}

// huntRun is huntVariant with what a run of it needs: the scenario and the
// machine's configuration (with the variant's quirk switched on).
func huntRun(fs *flag.FlagSet, n int, root string, args []string, e *env) (hunt.Variant, scenario.Scenario, machine.Config, error) {
	v, err := huntVariant(fs, n, root, args, e)
	if err != nil {
		return v, scenario.Scenario{}, machine.Config{}, err
	}
	s, err := v.Scenario()
	if err != nil {
		return v, scenario.Scenario{}, machine.Config{}, err
	}
	cfg, err := v.Machine(true)
	return v, s, cfg, err
}
