package web

import (
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

// fakeWorkbook is a workspace held in memory; its statuses change between
// requests as a check in another terminal would change the progress file.
type fakeWorkbook struct {
	mu     sync.Mutex
	status map[string]string
	pages  map[string]*ExercisePage
	files  map[string]string
}

func newFakeWorkbook() *fakeWorkbook {
	return &fakeWorkbook{
		status: map[string]string{"3-first": "not started", "3-second": "failing", "10-last": "done"},
		pages: map[string]*ExercisePage{
			"3-first": {ID: "3-first", Title: "The first one", ChapterURL: "/chapters/3-with-exercises",
				Goal: "Write First.\n\nIt returns <nil> on success.", Files: []string{"exercise.go"},
				Hints: []string{"Look at the ring.", "The tail wraps.", "Mask with size-1."}},
			"3-second": {ID: "3-second", Title: "The second one", ChapterURL: "/chapters/3-with-exercises",
				Files: []string{"exercise.go"}, Hints: []string{"a", "b", "c"},
				LastRun: &LastRun{Failed: true, Test: "TestSecondWraps", Message: "the tail did not wrap", FailSeq: 75}},
			"10-last": {ID: "10-last", Title: "The last one", ChapterURL: "/chapters/10-the-end",
				Files: []string{"exercise.go"}, Hints: []string{"a", "b", "c"},
				LastRun: &LastRun{Test: "TestLast"}},
		},
		files: map[string]string{"exercises/3-first/exercise.go": "package first\n"},
	}
}

func (f *fakeWorkbook) set(id, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status[id] = status
}

func (f *fakeWorkbook) Exercise(id string) (*ExercisePage, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.pages[id]
	if !ok {
		return nil, false
	}
	c := *p
	c.Status = f.status[id]
	return &c, true
}

func (f *fakeWorkbook) SourceFile(name string) ([]byte, error) {
	if s, ok := f.files[name]; ok {
		return []byte(s), nil
	}
	return nil, errors.New("not listed")
}

func (f *fakeWorkbook) Exercises() []ExerciseEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []ExerciseEntry
	for _, id := range []string{"3-first", "3-second", "10-last"} {
		p := f.pages[id]
		out = append(out, ExerciseEntry{ID: id, Title: p.Title, ChapterURL: p.ChapterURL, Status: f.status[id]})
	}
	return out
}

// bookWithExercises is testBook with a chapter that introduces its exercises
// under "## Exercises", with a section after it.
func bookWithExercises() fstest.MapFS {
	b := testBook()
	b["3-with-exercises.md"] = &fstest.MapFile{Data: []byte("# With exercises\n\n## Rings\n\nText.\n\n" +
		"## Exercises\n\n- `exercises/3-first`: the first.\n\nRun one with `go test`.\n\n## Further reading\n\nMore.\n")}
	return b
}

func workbookServer(t *testing.T, wb Workbook) *testServer {
	return newTestServer(t, func(c *Config) {
		c.Chapters = bookWithExercises()
		if wb != nil {
			c.Workbook = wb
		}
	})
}

func mustGet(t *testing.T, ts *testServer, path string, status int) string {
	t.Helper()
	w := ts.get(path)
	if w.Code != status {
		t.Fatalf("GET %s: status %d, want %d; body %.400s", path, w.Code, status, w.Body.String())
	}
	return w.Body.String()
}

func wantAll(t *testing.T, what, body string, want ...string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(body, s) {
			t.Errorf("%s lacks %q", what, s)
		}
	}
}

func TestContentsShowsProgress(t *testing.T) {
	wb := newFakeWorkbook()
	ts := workbookServer(t, wb)
	body := mustGet(t, ts, "/", 200)
	wantAll(t, "the contents", body,
		`<div class="ex-progress" data-chapter="3-with-exercises"><span class="ex-progress-count">0 of 2 done, 1 started</span>`,
		`<li class="ex-item" data-exercise="3-first" data-status="not-started"><a href="/exercises/3-first">The first one</a> <span class="ex-status ex-status-not-started">not started</span></li>`,
		`<li class="ex-item" data-exercise="3-second" data-status="failing"><a href="/exercises/3-second">The second one</a>`,
		`<div class="ex-progress" data-chapter="10-the-end"><span class="ex-progress-count">1 of 1 done</span>`,
	)
	if strings.Contains(body, `data-chapter="2-the-middle"`) {
		t.Error("a chapter without exercises shows progress")
	}
	if w := ts.get("/"); w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("the contents with progress are cached: %q", w.Header().Get("Cache-Control"))
	}

	// The progress is read at each request, not at start-up.
	wb.set("3-first", "done")
	wb.set("3-second", "done")
	body = mustGet(t, ts, "/", 200)
	wantAll(t, "the contents after a check", body, `<span class="ex-progress-count">2 of 2 done</span>`,
		`data-exercise="3-first" data-status="done"`)
}

func TestChapterListsItsExercises(t *testing.T) {
	wb := newFakeWorkbook()
	ts := workbookServer(t, wb)
	body := mustGet(t, ts, "/chapters/3-with-exercises", 200)
	list := `<section class="ex-progress" aria-label="This chapter's exercises">`
	wantAll(t, "the chapter", body, list, `Your exercises here: 0 of 2 done, 1 started`,
		`<a href="/exercises/3-first">The first one</a>`, `<a href="/exercises/3-second">The second one</a>`)
	// Where the chapter introduces them: after the Exercises section's text,
	// before the next section.
	intro, at, next := strings.Index(body, "Run one with"), strings.Index(body, list), strings.Index(body, `<h2 id="further-reading"`)
	if intro < 0 || next < 0 || !(intro < at && at < next) {
		t.Errorf("the exercises are listed at %d, want between the section's text (%d) and the next section (%d)", at, intro, next)
	}
	if strings.Count(body, `class="ex-progress"`) != 1 {
		t.Errorf("the chapter lists its exercises %d times", strings.Count(body, `class="ex-progress"`))
	}

	// A chapter with no Exercises heading lists its exercises at the end.
	body = mustGet(t, ts, "/chapters/10-the-end", 200)
	wantAll(t, "the last chapter", body, `<a href="/exercises/10-last">The last one</a>`)
	if at, words := strings.Index(body, "ex-progress"), strings.Index(body, "Last words."); at < words {
		t.Errorf("the list (%d) comes before the chapter's text (%d)", at, words)
	}
	if strings.Contains(mustGet(t, ts, "/chapters/2-the-middle", 200), "ex-progress") {
		t.Error("a chapter without exercises lists some")
	}

	wb.set("3-first", "started")
	wantAll(t, "the chapter after an edit", mustGet(t, ts, "/chapters/3-with-exercises", 200),
		`0 of 2 done, 2 started`, `data-exercise="3-first" data-status="started"`)
}

func TestPagesWithoutAWorkspace(t *testing.T) {
	ts := workbookServer(t, nil)
	for _, path := range []string{"/", "/chapters/3-with-exercises", "/chapters/10-the-end"} {
		if body := mustGet(t, ts, path, 200); strings.Contains(body, "ex-progress") || strings.Contains(body, "/exercises/") {
			t.Errorf("%s shows progress without a workspace", path)
		}
	}
	for _, path := range []string{"/exercises/3-first", "/runs/3-first", "/source/exercises/3-first/exercise.go"} {
		mustGet(t, ts, path, 404)
	}
	// The chapter is whole: nothing lost where the list would go.
	wantAll(t, "the chapter", mustGet(t, ts, "/chapters/3-with-exercises", 200), "Run one with", `<h2 id="further-reading"`, "More.")
}

func TestExercisePage(t *testing.T) {
	ts := workbookServer(t, newFakeWorkbook())
	body := mustGet(t, ts, "/exercises/3-first", 200)
	wantAll(t, "the exercise page", body,
		"<title>The first one · saccbook</title>",
		`<article class="exercise" data-exercise="3-first" data-status="not-started">`,
		`<span class="ex-status ex-status-not-started">not started</span>`,
		"It returns &lt;nil&gt; on success.",
		"<code>exercises/3-first/exercise.go</code>",
		"<code>go test ./exercises/3-first/</code>",
		`<a href="/chapters/3-with-exercises">`,
		`<p class="ex-last-run">Not run yet.</p>`,
	)
	// The hints, in order, each closed until asked for.
	hints := regexp.MustCompile(`<details class="ex-hint" data-hint="(\d)"><summary>Hint (\d)</summary><p>([^<]*)</p></details>`).FindAllStringSubmatch(body, -1)
	want := []string{"Look at the ring.", "The tail wraps.", "Mask with size-1."}
	if len(hints) != len(want) {
		t.Fatalf("%d hints, want %d", len(hints), len(want))
	}
	for i, h := range hints {
		if n := string(rune('1' + i)); h[1] != n || h[2] != n || h[3] != want[i] {
			t.Errorf("hint %d: %q", i+1, h[0])
		}
	}
	if strings.Contains(body, "<details open") {
		t.Error("a hint is open before the learner asks")
	}

	body = mustGet(t, ts, "/exercises/3-second", 200)
	wantAll(t, "a failing exercise's page", body,
		`<span class="ex-status ex-status-failing">failing</span>`,
		`<p class="ex-last-run" data-failed="true">Failed in <code>TestSecondWraps</code>.`,
		`<a href="/runs/3-second#seq=75">See the run step by step</a>`,
		`<pre class="ex-message">the tail did not wrap</pre>`)
	wantAll(t, "a passing exercise's page", mustGet(t, ts, "/exercises/10-last", 200),
		`data-failed="false">Passed.`, `<a href="/runs/10-last">See the run step by step</a>`)

	mustGet(t, ts, "/exercises/99-none", 404)
	mustGet(t, ts, "/exercises/..%2fgo.mod", 404)
}

func TestRunPage(t *testing.T) {
	ts := workbookServer(t, newFakeWorkbook())
	body := mustGet(t, ts, "/runs/3-second", 200)
	wantAll(t, "the run page", body,
		"<title>Your run: The second one · saccbook</title>",
		`<a href="/exercises/3-second">Exercise 3-second</a>`,
		"<code>TestSecondWraps</code> failed at event #75",
		`<div class="sacc-widget" data-scenario="recorded" data-recorded="3-second" data-seq="75" data-views="trace,source"></div>`)
	wantAll(t, "a passing run's page", mustGet(t, ts, "/runs/10-last", 200),
		"Every test passed", `data-recorded="10-last" data-seq="0"`)
	if body := mustGet(t, ts, "/runs/3-first", 200); strings.Contains(body, "sacc-widget") || !strings.Contains(body, "no recorded run yet") {
		t.Errorf("an exercise never run shows a widget: %.300s", body)
	}
	mustGet(t, ts, "/runs/99-none", 404)
}

func TestLearnerSourceRoute(t *testing.T) {
	ts := workbookServer(t, newFakeWorkbook())
	if body := mustGet(t, ts, "/source/exercises/3-first/exercise.go", 200); body != "package first\n" {
		t.Errorf("the learner's file: %q", body)
	}
	if w := ts.get("/source/exercises/3-first/exercise.go"); w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("the learner's file is cached: %q", w.Header().Get("Cache-Control"))
	}
	mustGet(t, ts, "/source/exercises/3-first/exercise_test.go", 404)
	mustGet(t, ts, "/source/exercises/../go.mod", 404)
}
