package browser_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	saccbook "github.com/saccbook/saccbook"
	"github.com/saccbook/saccbook/chapters"
	"github.com/saccbook/saccbook/static"
	"github.com/saccbook/saccbook/web"
	"github.com/saccbook/saccbook/web/live"
	"github.com/saccbook/saccbook/workbook"
)

// The exercise the learner's journey goes through, and the classic mistake they
// make in it: CTRL.ENABLE written before the ring registers, which the device
// refuses, so the failing event is the learner's own read of ERR_CODE.
const (
	journeyExercise = "02-enable-device"
	journeyMistake  = "enable-first.go"
)

// TestLearnerFailsSeesTheirRunAndFixesIt is the workbook in the browser, end to
// end: from a chapter to its exercise, a failing run (the learner's real code,
// run by go test) opened at the failing event with the learner's own line in
// the Source view, then the fix and the progress on the contents page.
func TestLearnerFailsSeesTheirRunAndFixesIt(t *testing.T) {
	findBrowser(t)
	if testing.Short() {
		t.Skip("runs go test on an exercise")
	}
	root := journeyWorkspace(t)
	book, err := workbook.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := book.Lookup(journeyExercise)
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(root, "exercises", journeyExercise, "exercise.go")
	copyFile(t, filepath.Join(root, "solutions", "mistakes", journeyExercise, journeyMistake), work)
	check(t, book, ex, false)
	rec, err := book.LastRun(ex)
	if err != nil {
		t.Fatalf("the run left no record: %v", err)
	}
	failing := recordedEvent(t, rec, rec.FailSeq)
	wantSrc := "exercises/" + journeyExercise + "/exercise.go:"
	if !rec.Failed || !strings.Contains(failing, `"src":"`+wantSrc) {
		t.Fatalf("the record should fail at an event of the learner's code; failed %v at #%d: %s", rec.Failed, rec.FailSeq, failing)
	}
	base := workbookServer(t, book)

	for _, width := range []int{1280, 390} {
		ctx := browser(t, width, 900, chromedp.Flag("force-prefers-reduced-motion", true))
		errs := consoleErrors(ctx)
		do(t, ctx, "open chapter 02", chromedp.EmulateViewport(int64(width), 900), chromedp.Navigate(base+"/chapters/02-mmio"),
			chromedp.WaitVisible(chromedp.CSS(`.ex-progress a[href="/exercises/`+journeyExercise+`"]`)))
		do(t, ctx, "show the chapter's exercises", chromedp.ScrollIntoView(chromedp.CSS(`.ex-progress`)))
		screenshot(t, ctx, fmt.Sprintf("workbook-chapter-%d", width))
		do(t, ctx, "click through to the exercise", chromedp.Click(chromedp.CSS(`.ex-progress a[href="/exercises/`+journeyExercise+`"]`)),
			chromedp.WaitVisible(chromedp.CSS(`article.exercise`)))
		if st := attr(t, ctx, `article.exercise`, "data-status"); st != "failing" {
			t.Errorf("the exercise page's status is %q, want failing", st)
		}
		do(t, ctx, "open the first hint", chromedp.Click(chromedp.CSS(`.ex-hint[data-hint="1"] > summary`)))
		if n := run(t, ctx, "open hints", chromedp.Evaluate[int](`document.querySelectorAll(".ex-hint[open]").length`)); n != 1 {
			t.Errorf("%d hints open after asking for the first", n)
		}
		screenshot(t, ctx, fmt.Sprintf("workbook-exercise-%d", width))

		do(t, ctx, "open the failing run", chromedp.Click(chromedp.CSS(`.ex-last-run a`)),
			chromedp.WaitVisible(chromedp.CSS(widget+` [data-action="play"]`)))
		waitFor(t, ctx, "the widget opens at the failing event",
			fmt.Sprintf(`document.querySelector(%q).dataset.seq === "%d"`, widget, rec.FailSeq))
		if tab := attr(t, ctx, widget+` .sw-tab[aria-selected="true"]`, "data-view"); tab != "trace" {
			t.Errorf("the run opens on the %q view, want trace (data-views)", tab)
		}
		do(t, ctx, "open the Source view", chromedp.Click(chromedp.CSS(widget+` [data-view="source"]`)))
		waitFor(t, ctx, "the learner's line is highlighted", `document.querySelectorAll(".sacc-widget .sw-src-row.is-current").length === 1`)
		main := run(t, ctx, "the source shown", chromedp.Evaluate[string](`document.querySelector(".sacc-widget .sw-src-main").textContent`))
		if !strings.HasPrefix(main, wantSrc) {
			t.Errorf("the Source view shows %q, want the learner's %s…", main, wantSrc)
		}
		line := run(t, ctx, "the highlighted line", chromedp.Evaluate[string](`document.querySelector(".sacc-widget .sw-src-row.is-current").textContent`))
		// The row is the line's number, then its text.
		if want := learnerLine(t, work, main); !strings.HasSuffix(line, want) || strings.TrimSpace(want) == "" {
			t.Errorf("the highlighted line is %q, want the learner's %q", line, want)
		}
		for _, sel := range []string{widget + " .sw-badge", widget + ` input[name="seed"]`, widget + " .sw-seed"} {
			if visible(t, ctx, sel) {
				t.Errorf("a recorded run shows %s", sel)
			}
		}
		do(t, ctx, "show the widget", chromedp.ScrollIntoView(chromedp.CSS(widget)))
		screenshot(t, ctx, fmt.Sprintf("workbook-run-%d", width))
		if e := errs(); len(e) > 0 {
			t.Fatalf("JavaScript errors in the console at %d px:\n%s", width, strings.Join(e, "\n"))
		}
	}

	// The fix, checked as saccbook check does it, shows on the next page load.
	copyFile(t, filepath.Join(root, "solutions", journeyExercise, "exercise.go"), work)
	check(t, book, ex, true)
	for _, width := range []int{1280, 390} {
		ctx := browser(t, width, 900, chromedp.Flag("force-prefers-reduced-motion", true))
		do(t, ctx, "open the contents", chromedp.EmulateViewport(int64(width), 900), chromedp.Navigate(base+"/"),
			chromedp.WaitVisible(chromedp.CSS(`.ex-progress[data-chapter="02-mmio"]`)))
		count := run(t, ctx, "chapter 02's progress", chromedp.Evaluate[string](`document.querySelector('.ex-progress[data-chapter="02-mmio"] .ex-progress-count').textContent`))
		if count != "1 of 1 done" {
			t.Errorf("chapter 02's progress reads %q, want 1 of 1 done", count)
		}
		if st := attr(t, ctx, `.ex-item[data-exercise="`+journeyExercise+`"]`, "data-status"); st != "done" {
			t.Errorf("the contents give the exercise status %q, want done", st)
		}
		do(t, ctx, "show chapter 02", chromedp.ScrollIntoView(chromedp.CSS(`.ex-progress[data-chapter="02-mmio"]`)))
		screenshot(t, ctx, fmt.Sprintf("workbook-contents-%d", width))
	}
}

// journeyWorkspace is a workspace in a temporary directory with the one
// exercise, as shipped, its solution and its catalogued mistakes.
func journeyWorkspace(t *testing.T) string {
	t.Helper()
	src, err := workbook.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	writeText(t, filepath.Join(dst, "go.work"), "go 1.26.0\n\nuse (\n\t"+src+"\n\t./exercises\n)\n")
	if sum, err := os.ReadFile(filepath.Join(src, "go.work.sum")); err == nil {
		writeText(t, filepath.Join(dst, "go.work.sum"), string(sum))
	}
	for _, p := range []string{"exercises/go.mod", "exercises/internal", "solutions/go.mod",
		"exercises/" + journeyExercise, "solutions/" + journeyExercise, "solutions/mistakes/" + journeyExercise} {
		copyTree(t, filepath.Join(src, p), filepath.Join(dst, p))
	}
	// The copy starts as shipped, whatever this tree's working copy holds.
	copyTree(t, filepath.Join(src, "exercises", journeyExercise, ".stub"), filepath.Join(dst, "exercises", journeyExercise))
	_ = os.RemoveAll(filepath.Join(dst, "exercises", ".runs"))
	return dst
}

// check runs the exercise's tests on the learner's files and records the
// outcome in the progress file, as saccbook check does.
func check(t *testing.T, book *workbook.Book, ex *workbook.Exercise, wantPass bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := book.Run(ctx, []*workbook.Exercise{ex}, workbook.Working, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := res[ex.ID]
	if r.Passed != wantPass {
		t.Fatalf("%s passed %v, want %v:\n%s", ex.ID, r.Passed, wantPass, r.Report())
	}
	prog, err := workbook.LoadProgress(book.Root)
	if err != nil {
		t.Fatal(err)
	}
	prog.Record(ex, r, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err := prog.Save(book.Root); err != nil {
		t.Fatal(err)
	}
}

func recordedEvent(t *testing.T, rec *workbook.RunRecord, seq uint64) string {
	t.Helper()
	key := fmt.Sprintf(`"seq":%d,`, seq)
	for _, e := range rec.Events {
		if strings.Contains(string(e), key) {
			return string(e)
		}
	}
	t.Fatalf("the record has no event #%d", seq)
	return ""
}

// learnerLine is the line of the learner's file that "FILE:LINE" names.
func learnerLine(t *testing.T, path, fileLine string) string {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(fileLine[strings.LastIndex(fileLine, ":")+1:], "%d", &n); err != nil {
		t.Fatalf("%q: %v", fileLine, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if n < 1 || n > len(lines) {
		t.Fatalf("%s has no line %d", path, n)
	}
	return lines[n-1]
}

func visible(t *testing.T, ctx context.Context, sel string) bool {
	t.Helper()
	return run(t, ctx, "is "+sel+" visible", chromedp.Evaluate[bool](fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.offsetParent !== null && !e.closest("[hidden]"); })()`, sel)))
}

// workbookServer serves the whole book with the workspace's exercises, as
// saccbook serve does inside a workspace.
func workbookServer(t *testing.T, book *workbook.Book) string {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	wb := testWorkbook{book}
	hub := live.New(live.Options{AllowedOrigins: web.OriginPatterns(web.DefaultAllowedHosts()), Logger: quiet, Recorded: wb.recorded})
	h, err := web.NewHandler(web.Config{Chapters: chapters.FS, Static: static.FS, Live: hub, Source: saccbook.Source,
		AllowedHosts: web.DefaultAllowedHosts(), Logger: quiet, Workbook: wb})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		hub.Close()
		ts.Close()
	})
	return ts.URL
}

// testWorkbook shows a workspace to the server the way cmd/saccbook's does.
type testWorkbook struct{ b *workbook.Book }

func (w testWorkbook) Exercise(id string) (*web.ExercisePage, bool) {
	ex, err := w.b.Lookup(id)
	if err != nil {
		return nil, false
	}
	p := &web.ExercisePage{ID: ex.ID, Title: ex.Title, ChapterURL: ex.ChapterURL, Files: ex.Files, Hints: ex.Hints, Goal: "(the stub's doc)"}
	p.Status = w.status(ex)
	if r, err := w.b.LastRun(ex); err == nil {
		p.LastRun = &web.LastRun{Failed: r.Failed, Test: r.Test, Message: r.Message, FailSeq: r.FailSeq}
	}
	return p, true
}

func (w testWorkbook) status(ex *workbook.Exercise) string {
	prog, err := workbook.LoadProgress(w.b.Root)
	if err != nil {
		return ""
	}
	st, _ := w.b.Status(ex, prog)
	return string(st)
}

func (w testWorkbook) SourceFile(name string) ([]byte, error) { return w.b.SourceFile(name) }

func (w testWorkbook) Exercises() []web.ExerciseEntry {
	var out []web.ExerciseEntry
	for _, ex := range w.b.Exercises {
		out = append(out, web.ExerciseEntry{ID: ex.ID, Title: ex.Title, ChapterURL: ex.ChapterURL, Status: w.status(ex)})
	}
	return out
}

func (w testWorkbook) recorded(id string) (*live.Recording, error) {
	ex, err := w.b.Lookup(id)
	if err != nil {
		return nil, err
	}
	r, err := w.b.LastRun(ex)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no recorded run of %s", id)
	}
	if err != nil {
		return nil, err
	}
	rec := &live.Recording{Events: r.Events}
	if r.Failed {
		rec.FailSeq, rec.Error = r.FailSeq, r.Test+": "+r.Message
	}
	return rec, nil
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	writeText(t, dst, string(b))
}

func writeText(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
