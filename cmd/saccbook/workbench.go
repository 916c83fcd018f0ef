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
	return &bench{
		book: b, progress: p, run: b.Run, now: time.Now,
		in: bufio.NewReader(e.stdin), out: e.stdout, errw: e.stderr,
		poll: 500 * time.Millisecond,
	}, nil
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
	return results, w.save()
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
			fmt.Fprintf(w.out, "There is a hint for this failure: saccbook hint %s\n", ex.ID)
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
	if level < workbook.HintLevels {
		fmt.Fprintf(w.out, "More: saccbook hint %s shows hint %d (%s).\n", ex.ID, level+1, workbook.HintNames[level+1])
	} else {
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
// watch

// watch re-runs the current exercise's tests whenever its files change (or, in
// manual mode, whenever Enter is pressed). Without an id it follows the book:
// when the current exercise passes it moves on to the next one not done.
func (w *bench) watch(ctx context.Context, id string, manual bool) error {
	follow := id == ""
	var ex *workbook.Exercise
	if follow {
		st, err := w.statuses()
		if err != nil {
			return err
		}
		if ex = workbook.Next(w.book.Exercises, st); ex == nil {
			fmt.Fprintln(w.out, "Every exercise passes. Nothing to watch.")
			return nil
		}
	} else {
		var err error
		if ex, err = w.book.Lookup(id); err != nil {
			return err
		}
	}
	lines := make(chan string)
	if manual {
		go func() {
			defer close(lines)
			for {
				l, err := w.in.ReadString('\n')
				if err != nil && l == "" {
					return
				}
				select {
				case lines <- strings.TrimSpace(l):
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	for {
		w.announce(ex, manual)
		// Stamp the files before the run: a save during it counts as a change.
		before := w.stamps(ex)
		r, err := w.runOne(ctx, ex)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if r.Passed && follow {
			st, err := w.statuses()
			if err != nil {
				return err
			}
			next := workbook.Next(w.book.Exercises, st)
			if next == nil {
				fmt.Fprintln(w.out, "Every exercise passes. Well done.")
				return nil
			}
			fmt.Fprintf(w.out, "On to %s: %s\n", next.ID, next.Title)
			ex = next
			continue
		}
		if manual {
			fmt.Fprintln(w.out, "Press Enter to run the tests again, or q and Enter to stop.")
			select {
			case <-ctx.Done():
				return nil
			case l, ok := <-lines:
				if !ok || l == "q" || l == "quit" {
					return nil
				}
			}
			continue
		}
		fmt.Fprintln(w.out, "Waiting for a change… (Ctrl-C to stop)")
		if err := w.waitForChange(ctx, ex, before); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

func (w *bench) announce(ex *workbook.Exercise, manual bool) {
	var files []string
	for _, f := range ex.Files {
		files = append(files, w.rel(w.book.WorkPath(ex, f)))
	}
	how := "save to re-run"
	if manual {
		how = "Enter re-runs"
	}
	fmt.Fprintf(w.out, "\n== %s: %s (%s; %s)\n", ex.ID, ex.Title, strings.Join(files, ", "), how)
}

// runOne runs one exercise's tests, records and reports them.
func (w *bench) runOne(ctx context.Context, ex *workbook.Exercise) (*workbook.Result, error) {
	results, err := w.test(ctx, []*workbook.Exercise{ex})
	if err != nil {
		return nil, err
	}
	r := results[ex.ID]
	if !r.Passed {
		fmt.Fprintln(w.out, r.Report())
	}
	w.verdict(ex, r, true)
	return r, nil
}

// fileStamp is what polling compares: a file's modification time and size.
type fileStamp struct {
	mod  time.Time
	size int64
	ok   bool
}

func (w *bench) stamps(ex *workbook.Exercise) []fileStamp {
	var out []fileStamp
	for _, f := range ex.Files {
		fi, err := os.Stat(w.book.WorkPath(ex, f))
		if err != nil {
			out = append(out, fileStamp{})
			continue
		}
		out = append(out, fileStamp{fi.ModTime(), fi.Size(), true})
	}
	return out
}

// waitForChange polls the exercise's files until one differs from before, then until they
// hold still for one more poll (an editor may save in two steps). Polling works
// on every file system, network and container mounts included.
func (w *bench) waitForChange(ctx context.Context, ex *workbook.Exercise, before []fileStamp) error {
	tick := time.NewTicker(w.poll)
	defer tick.Stop()
	changed := false
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		now := w.stamps(ex)
		same := slices.Equal(now, before)
		if changed && same {
			return nil
		}
		changed = changed || !same
		before = now
	}
}

// ---------------------------------------------------------------------------
// solution

// solution prints the reference solution: at once for a solved exercise, after
// a confirmation (or --yes) for the others.
func (w *bench) solution(id string, yes bool) error {
	ex, err := w.book.Lookup(id)
	if err != nil {
		return err
	}
	e := w.progress.Of(ex.ID)
	if e.Status != workbook.Done && !yes {
		fmt.Fprintf(w.out, "You have not solved %s yet. Reading the solution now takes away the moment you solve it yourself;\n"+
			"saccbook hint %s may be all you need.\nShow the solution anyway? Type yes: ", ex.ID, ex.ID)
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
// learner's files in exercises/.backup/ID/TIME/.
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
	stamp := w.now().Format("20060102-150405")
	backup := filepath.Join(w.book.BackupDir(ex), stamp)
	for n := 2; ; n++ {
		if _, err := os.Stat(backup); errors.Is(err, os.ErrNotExist) {
			break
		}
		backup = filepath.Join(w.book.BackupDir(ex), fmt.Sprintf("%s-%d", stamp, n))
	}
	if !yes {
		fmt.Fprintf(w.out, "Reset %s to the stub? Your files will be kept in %s/.\nType yes: ", ex.ID, w.rel(backup))
		if !w.confirm() {
			fmt.Fprintln(w.out, "Nothing changed.")
			return nil
		}
	}
	// Save everything first; only then overwrite anything.
	for _, f := range ex.Files {
		data, err := os.ReadFile(w.book.WorkPath(ex, f))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		dst := filepath.Join(backup, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return fmt.Errorf("back up %s: %w (nothing was reset)", f, err)
		}
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
	e.Status, e.Failing, e.Summary, e.KeyedHints, e.LastChecked = workbook.NotStarted, nil, "", nil, ""
	fmt.Fprintf(w.out, "Your files are in %s/; %s is back to the stub.\n", w.rel(backup), ex.ID)
	return w.save()
}
