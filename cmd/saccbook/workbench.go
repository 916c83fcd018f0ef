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
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/saccbook/saccbook/workbook"
)

// bench is a learner's session with the exercises of one workspace: the book,
// the progress record, how to run tests, and where to talk. Every progress
// command builds one from a root directory, so tests can point it at a copy.
type bench struct {
	book     *workbook.Book
	progress *workbook.Progress
	// run runs exercises' tests; it is workbook.Book.Run unless a test says
	// otherwise.
	run  func(ctx context.Context, exs []*workbook.Exercise, v workbook.Variant, progress func(*workbook.Exercise, *workbook.Result)) (map[string]*workbook.Result, error)
	now  func() time.Time
	in   *bufio.Reader
	out  io.Writer
	errw io.Writer
	// poll is how often watch looks at the files.
	poll time.Duration
	// interactive says whether there is someone to ask: standard input is a
	// terminal and CI is not set. Without one, reset and an early solution
	// refuse unless --yes says so, and watch reads whole lines.
	interactive bool
	ci          bool // the CI environment variable is set
	// term is the terminal behind standard input, for watch's single keys;
	// nil when standard input is not a terminal.
	term terminal
	// screen says whether standard output is a terminal that watch may clear.
	screen bool
	// watching is set while watch runs, raw while it has the terminal in raw
	// mode.
	watching, raw bool
}

// rootFlag registers --root, shared by the progress commands.
func rootFlag(fs *flag.FlagSet) *string {
	return fs.String("root", "", "the workspace root (default: the directory holding go.work, found from the current directory up)")
}

// openBench opens the workbook at root, or at the workspace around the current
// directory when root is "".
func openBench(root string, e *env) (*bench, error) {
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		if root, err = workbook.FindRoot(wd); err != nil {
			return nil, err
		}
	}
	b, err := workbook.Open(root)
	if err != nil {
		return nil, err
	}
	if len(b.Exercises) == 0 {
		return nil, fmt.Errorf("%s has no exercises", root)
	}
	p, err := workbook.LoadProgress(b.Root)
	if err != nil {
		return nil, err
	}
	w := &bench{
		book: b, progress: p, run: b.Run, now: time.Now,
		in: bufio.NewReader(e.stdin), out: e.stdout, errw: e.stderr,
		poll: 500 * time.Millisecond,
		ci:   os.Getenv("CI") != "",
		term: terminalOf(e.stdin), screen: isScreen(e.stdout),
	}
	w.interactive = w.term != nil && !w.ci
	return w, nil
}

func (w *bench) save() error { return w.progress.Save(w.book.Root) }

// rel is a path relative to the root, for messages.
func (w *bench) rel(path string) string {
	if r, err := filepath.Rel(w.book.Root, path); err == nil {
		return r
	}
	return path
}

// statuses is every exercise's status as recorded, without running anything.
func (w *bench) statuses() (map[string]workbook.Status, error) {
	st := map[string]workbook.Status{}
	for _, ex := range w.book.Exercises {
		s, err := w.book.Status(ex, w.progress)
		if err != nil {
			return nil, err
		}
		st[ex.ID] = s
	}
	return st, nil
}

// ---------------------------------------------------------------------------
// list

func (w *bench) list() error {
	st, err := w.statuses()
	if err != nil {
		return err
	}
	idWidth, stWidth := 0, len(workbook.NotStarted)
	for _, ex := range w.book.Exercises {
		idWidth = max(idWidth, len(ex.ID))
	}
	chapter := -1
	for _, ex := range w.book.Exercises {
		if ex.Chapter != chapter {
			if chapter >= 0 {
				fmt.Fprintln(w.out)
			}
			chapter = ex.Chapter
			c := w.book.ChapterOf(chapter)
			fmt.Fprintf(w.out, "%02d %s\n", c.Number, c.Title)
		}
		fmt.Fprintf(w.out, "   %-*s  %-*s  %s\n", idWidth, ex.ID, stWidth, st[ex.ID], ex.Title)
	}
	fmt.Fprintln(w.out)
	w.footer(st, nil)
	return nil
}

// footer is the count of done exercises and the next step.
func (w *bench) footer(st map[string]workbook.Status, results map[string]*workbook.Result) {
	done := 0
	for _, s := range st {
		if s == workbook.Done {
			done++
		}
	}
	fmt.Fprintf(w.out, "%d of %d done.\n", done, len(w.book.Exercises))
	next := workbook.Next(w.book.Exercises, st)
	if next == nil {
		fmt.Fprintf(w.out, "Every exercise passes. Well done.\n")
		return
	}
	fmt.Fprintf(w.out, "next: %s, %s\n", next.ID, w.nextStep(next, st[next.ID], results[next.ID]))
}

// nextStep says what to do about ex.
func (w *bench) nextStep(ex *workbook.Exercise, s workbook.Status, r *workbook.Result) string {
	file := w.rel(w.book.WorkPath(ex, ex.Files[0]))
	switch s {
	case workbook.NotStarted:
		return fmt.Sprintf("%q: edit %s, then run saccbook check %s", ex.Title, file, ex.ID)
	case workbook.Started:
		return fmt.Sprintf("%q: run saccbook check %s to test your changes", ex.Title, ex.ID)
	}
	summary := ""
	if r != nil {
		summary = r.Summary()
	} else if e := w.progress.Exercises[ex.ID]; e != nil {
		summary = e.Summary
	}
	if summary == "" {
		return fmt.Sprintf("%q is failing: saccbook check %s shows why", ex.Title, ex.ID)
	}
	return fmt.Sprintf("%s\n      details: saccbook check %s    a hint: saccbook hint %s", shorten(summary, 160), ex.ID, ex.ID)
}

func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// ---------------------------------------------------------------------------
// check

// check runs the tests of one exercise (id) or of every started one (id ""),
// records the outcome and prints the table. It exits with status 1 when any
// exercise it ran failed, so that scripts and CI can rely on its exit code.
func (w *bench) check(ctx context.Context, id string) error {
	var run []*workbook.Exercise
	if id != "" {
		ex, err := w.book.Lookup(id)
		if err != nil {
			return err
		}
		run = append(run, ex)
	} else {
		for _, ex := range w.book.Exercises {
			started, err := w.book.Started(ex)
			if err != nil {
				return err
			}
			if started {
				run = append(run, ex)
			}
		}
		if len(run) == 0 {
			fmt.Fprintln(w.out, "You have not started any exercise yet, so there is nothing to check.")
		}
	}
	results, err := w.test(ctx, run)
	if err != nil {
		return err
	}
	if id != "" {
		if r := results[run[0].ID]; !r.Passed {
			fmt.Fprintln(w.out, r.Report())
		}
	}
	failing := 0
	for _, ex := range run {
		r := results[ex.ID]
		w.verdict(ex, r, id != "")
		if !r.Passed {
			failing++
		}
	}
	st, err := w.statuses()
	if err != nil {
		return err
	}
	for _, ex := range run {
		st[ex.ID] = results[ex.ID].Status()
	}
	fmt.Fprintln(w.out)
	w.table(st, results)
	fmt.Fprintln(w.out)
	w.footer(st, results)
	if failing > 0 {
		return exitStatus(1) // every failure is on the screen already
	}
	return nil
}

// test runs exs, says so as each starts, and records the outcomes.
func (w *bench) test(ctx context.Context, exs []*workbook.Exercise) (map[string]*workbook.Result, error) {
	if len(exs) == 0 {
		return map[string]*workbook.Result{}, nil
	}
	var names []string
	for _, ex := range exs {
		names = append(names, ex.ID)
	}
	fmt.Fprintf(w.errw, "building %s…\n", strings.Join(names, ", "))
	results, err := w.run(ctx, exs, workbook.Working, func(ex *workbook.Exercise, r *workbook.Result) {
		if r == nil {
			fmt.Fprintf(w.errw, "running %s…\n", ex.ID)
		}
	})
	if err != nil {
		return nil, err
	}
	now := w.now()
	for _, ex := range exs {
		if r := results[ex.ID]; r != nil {
			w.progress.Record(ex, r, now)
		}
	}
	if err := w.save(); err != nil {
		return nil, err
	}
	w.reportToClass(ctx, exs, results, now)
	return results, nil
}

// verdict is one exercise's outcome in a sentence: the tests counted from go
// test's own report, and a build failure said as such, never as a count.
// shown says whether the failure's report is on the screen above.
func (w *bench) verdict(ex *workbook.Exercise, r *workbook.Result, shown bool) {
	fix := fmt.Sprintf("saccbook check %s shows why.", ex.ID)
	if shown {
		fix = "Fix what it says above and check again."
	}
	switch {
	case r.Passed:
		fmt.Fprintf(w.out, "%s: done, %s.\n", ex.ID, r.Verdict())
	case r.BuildFailed:
		fmt.Fprintf(w.out, "%s: %s. %s\n", ex.ID, r.Verdict(), fix)
	default:
		fmt.Fprintf(w.out, "%s: %s.\n", ex.ID, r.Verdict())
		if e := w.progress.Exercises[ex.ID]; e != nil && len(e.KeyedHints) > 0 {
			if w.watching {
				fmt.Fprintln(w.out, "There is a hint for this failure: press h.")
			} else {
				fmt.Fprintf(w.out, "There is a hint for this failure: saccbook hint %s\n", ex.ID)
			}
		}
	}
}

func (w *bench) table(st map[string]workbook.Status, results map[string]*workbook.Result) {
	tw := tabwriter.NewWriter(w.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "EXERCISE\tSTATUS\t\n")
	for _, ex := range w.book.Exercises {
		note := ""
		if r := results[ex.ID]; r != nil && !r.Passed {
			note = shorten(r.Summary(), 90)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", ex.ID, st[ex.ID], note)
	}
	tw.Flush()
}

// ---------------------------------------------------------------------------
// hint

// hint shows the hints for the last failure, then the next general hint not yet
// shown (or level, if it is not 0).
func (w *bench) hint(id string, level int) error {
	ex, err := w.book.Lookup(id)
	if err != nil {
		return err
	}
	return w.showHint(ex, level)
}

// showHint is hint for ex. In watch, the h key shows the next one.
func (w *bench) showHint(ex *workbook.Exercise, level int) error {
	e := w.progress.Of(ex.ID)
	if level == 0 {
		level = min(e.HintsShown+1, workbook.HintLevels)
	}
	fmt.Fprintf(w.out, "%s: %s\n\n", ex.ID, ex.Title)
	if len(e.KeyedHints) > 0 {
		what := "the failure you saw last"
		if len(e.Failing) > 0 {
			what += " (" + e.Failing[0] + ")"
		}
		fmt.Fprintf(w.out, "For %s:\n", what)
		for _, i := range e.KeyedHints {
			if i >= 0 && i < len(ex.KeyedHints) {
				writeWrapped(w.out, ex.KeyedHints[i].Hint, "  - ", "    ", 80)
			}
		}
		fmt.Fprintln(w.out)
	} else if e.LastChecked == "" {
		if started, _ := w.book.Started(ex); started {
			fmt.Fprintf(w.out, "(Run saccbook check %s first: then the hint can speak to the failure you see.)\n\n", ex.ID)
		}
	}
	fmt.Fprintf(w.out, "Hint %d of %d (%s):\n", level, workbook.HintLevels, workbook.HintNames[level])
	writeWrapped(w.out, ex.Hints[level-1], "  ", "  ", 80)
	e.HintsShown = max(e.HintsShown, level)
	fmt.Fprintln(w.out)
	switch {
	case level < workbook.HintLevels && w.watching:
		fmt.Fprintf(w.out, "More: h shows hint %d (%s).\n", level+1, workbook.HintNames[level+1])
	case level < workbook.HintLevels:
		fmt.Fprintf(w.out, "More: saccbook hint %s shows hint %d (%s).\n", ex.ID, level+1, workbook.HintNames[level+1])
	default:
		fmt.Fprintf(w.out, "That is the last hint. saccbook solution %s shows the reference solution.\n", ex.ID)
	}
	return w.save()
}

// writeWrapped writes text in lines of at most width columns: the first after
// first, the others after indent.
func writeWrapped(out io.Writer, text, first, indent string, width int) {
	line, empty := first, true
	for _, word := range strings.Fields(text) {
		if !empty && len([]rune(line))+1+len([]rune(word)) > width {
			fmt.Fprintln(out, line)
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	if !empty {
		fmt.Fprintln(out, line)
	}
}

// ---------------------------------------------------------------------------
// solution

// solution prints the reference solution: at once for a solved exercise, or
// for one whose solution the learner has seen already; for the others after
// one confirmation (or --yes), remembered in the progress file as
// solution_seen. With no one to ask (no terminal, or CI) it refuses.
func (w *bench) solution(id string, yes bool) error {
	ex, err := w.book.Lookup(id)
	if err != nil {
		return err
	}
	e := w.progress.Of(ex.ID)
	if e.Status != workbook.Done && !e.SolutionSeen && !yes {
		if !w.interactive {
			return fmt.Errorf("not shown: %s is not solved yet, and %s, so there is no one to ask whether you want the solution now; "+
				"saccbook solution %s --yes shows it", ex.ID, w.whyNoQuestion(), ex.ID)
		}
		fmt.Fprintf(w.out, "You have not solved %s yet. Reading the solution now takes away the moment you solve it yourself;\n"+
			"saccbook hint %s may be all you need.\nShow the solution anyway? (You will not be asked again for %s.) Type yes: ", ex.ID, ex.ID, ex.ID)
		if !w.confirm() {
			fmt.Fprintln(w.out, "Not shown.")
			return nil
		}
	}
	for _, f := range ex.Files {
		data, err := os.ReadFile(w.book.SolutionPath(ex, f))
		if err != nil {
			return err
		}
		fmt.Fprintf(w.out, "// %s\n%s", w.rel(w.book.SolutionPath(ex, f)), data)
	}
	e.SolutionSeen = true
	return w.save()
}

// confirm reads one line and reports whether it says yes.
func (w *bench) confirm() bool {
	line, err := w.in.ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(w.out)
		return false
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "yes", "y":
		return true
	}
	return false
}

// ---------------------------------------------------------------------------
// reset

// reset puts the stub back, after a confirmation (or --yes), keeping the
// learner's files in exercises/.backup/ID/TIME/. With no one to ask (no
// terminal, or CI) and no --yes it changes nothing and fails.
func (w *bench) reset(id string, yes bool) error {
	ex, err := w.book.Lookup(id)
	if err != nil {
		return err
	}
	started, err := w.book.Started(ex)
	if err != nil {
		return err
	}
	if !started {
		fmt.Fprintf(w.out, "%s is as shipped already: nothing to reset.\n", ex.ID)
		return nil
	}
	backup := w.book.NextBackup(ex, w.now())
	if !yes {
		if !w.interactive {
			return fmt.Errorf("nothing changed: reset replaces your files of %s, and %s, so there is no one to ask; "+
				"saccbook reset %s --yes resets it (your files are still backed up first)", ex.ID, w.whyNoQuestion(), ex.ID)
		}
		fmt.Fprintf(w.out, "Reset %s to the stub? Your files will be kept in %s/.\nType yes: ", ex.ID, w.rel(backup))
		if !w.confirm() {
			fmt.Fprintln(w.out, "Nothing changed.")
			return nil
		}
	}
	// Save everything first; only then overwrite anything.
	if _, err := w.book.SaveBackup(ex, backup); err != nil {
		return fmt.Errorf("%w (nothing was reset)", err)
	}
	for _, f := range ex.Files {
		data, err := os.ReadFile(w.book.StubPath(ex, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(w.book.WorkPath(ex, f), data, 0o644); err != nil {
			return err
		}
	}
	e := w.progress.Of(ex.ID)
	e.Forget(workbook.NotStarted)
	fmt.Fprintf(w.out, "Your files are in %s/; %s is back to the stub.\n", w.rel(backup), ex.ID)
	fmt.Fprintf(w.out, "saccbook restore %s brings them back.\n", ex.ID)
	return w.save()
}

// whyNoQuestion says why the bench cannot ask: no terminal, or CI.
func (w *bench) whyNoQuestion() string {
	if w.term == nil {
		return "standard input is not a terminal"
	}
	return "CI is set"
}

// ---------------------------------------------------------------------------
// restore

// restore brings a backup of the exercise back: the newest, or the one named.
// The learner's files as they are now are backed up first, as reset does.
func (w *bench) restore(id, name string, list bool) error {
	ex, err := w.book.Lookup(id)
	if err != nil {
		return err
	}
	backups, err := w.book.Backups(ex)
	if err != nil {
		return err
	}
	where := w.rel(w.book.BackupDir(ex))
	if len(backups) == 0 {
		msg := fmt.Sprintf("no backup of %s in %s/: saccbook reset %s makes one before it puts the stub back", ex.ID, where, ex.ID)
		if list {
			fmt.Fprintln(w.out, strings.ToUpper(msg[:1])+msg[1:]+".")
			return nil
		}
		return errors.New(msg)
	}
	if list {
		fmt.Fprintf(w.out, "Backups of %s in %s/, newest last:\n", ex.ID, where)
		tw := tabwriter.NewWriter(w.out, 0, 4, 2, ' ', 0)
		for _, bk := range backups {
			when := ""
			if t, ok := bk.Time(); ok {
				when = t.Format("2006-01-02 15:04:05")
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", bk.Name, when, strings.Join(bk.Files, ", "))
		}
		tw.Flush()
		fmt.Fprintf(w.out, "saccbook restore %s brings the newest back; saccbook restore %s NAME brings back the one named.\n", ex.ID, ex.ID)
		return nil
	}
	bk := backups[len(backups)-1]
	if name != "" {
		i := slices.IndexFunc(backups, func(b workbook.Backup) bool { return b.Name == name })
		if i < 0 {
			var names []string
			for _, b := range backups {
				names = append(names, b.Name)
			}
			return fmt.Errorf("no backup %q of %s; there are %s (saccbook restore %s --list shows them)", name, ex.ID, strings.Join(names, ", "), ex.ID)
		}
		bk = backups[i]
	}
	if w.book.Matches(ex, bk) {
		fmt.Fprintf(w.out, "Your files of %s are those of backup %s already: nothing to restore.\n", ex.ID, bk.Name)
		return nil
	}
	// The files as they are now are work too: save them before anything is
	// overwritten. The stub as shipped needs no copy: reset brings it back.
	started, err := w.book.Started(ex)
	if err != nil {
		return err
	}
	saved := ""
	if started {
		dir := w.book.NextBackup(ex, w.now())
		if _, err := w.book.SaveBackup(ex, dir); err != nil {
			return fmt.Errorf("%w (nothing was restored)", err)
		}
		saved = dir
	}
	if err := w.book.RestoreBackup(ex, bk); err != nil {
		return err
	}
	e := w.progress.Of(ex.ID)
	e.Forget(workbook.Started)
	if saved != "" {
		fmt.Fprintf(w.out, "Your files as they were are in %s/.\n", w.rel(saved))
	}
	fmt.Fprintf(w.out, "%s holds backup %s again (%s). saccbook check %s tests it.\n", ex.ID, bk.Name, strings.Join(bk.Files, ", "), ex.ID)
	return w.save()
}
