package browser_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/saccbook/saccbook/chapters"
	"github.com/saccbook/saccbook/sacc/adversary"
	"github.com/saccbook/saccbook/static"
	"github.com/saccbook/saccbook/web"
	"github.com/saccbook/saccbook/web/live"
)

// memRecords keeps the adversary levels' records in memory.
type memRecords struct {
	mu   sync.Mutex
	won  map[string]int // level: choices
	held map[string]int // level: games the driver held
}

func (m *memRecords) AdversaryStatus() (map[string]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]string{}
	for name := range m.held {
		out[name] = "tried"
	}
	for name := range m.won {
		out[name] = "won"
	}
	return out, nil
}

func (m *memRecords) RecordPlay(name string, won bool, choices int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if won {
		m.won[name] = choices
	} else {
		m.held[name]++
	}
	return nil
}

func adversaryServer(t *testing.T, rec web.AdversaryRecords) string {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	hub := live.New(live.Options{AllowedOrigins: web.OriginPatterns(web.DefaultAllowedHosts()), Logger: quiet})
	h, err := web.NewHandler(web.Config{Chapters: chapters.FS, Static: static.FS, Live: hub,
		AllowedHosts: web.DefaultAllowedHosts(), Logger: quiet, Adversary: rec})
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

// TestAdversaryInTheBrowser: the list of levels, then a level played by clicks
// along the solver's breaking schedule, drawn in place by static/adversary.js
// (the page is never loaded again: a mark left on window survives), to the win;
// the win goes into the learner's record; undo and the browser's back button
// go one choice back.
func TestAdversaryInTheBrowser(t *testing.T) {
	rec := &memRecords{won: map[string]int{}, held: map[string]int{}}
	base := adversaryServer(t, rec)
	l, _ := adversary.Lookup("ack-then-drain")
	r := l.Solve(adversary.DefaultBound)
	if !r.Broken() {
		t.Fatal("the solver does not break ack-then-drain")
	}
	for _, width := range []int{1280, 390} {
		ctx := browser(t, width, 900, chromedp.Flag("force-prefers-reduced-motion", true))
		errs := consoleErrors(ctx)
		do(t, ctx, "open the levels", chromedp.EmulateViewport(int64(width), 900), chromedp.Navigate(base+"/adversary"),
			chromedp.WaitVisible(chromedp.CSS(`a[href="/adversary/ack-then-drain"]`)))
		if rows := run(t, ctx, "count the levels", chromedp.Evaluate[int](`document.querySelectorAll("table.adv-list tbody tr").length`)); rows != len(adversary.Levels()) {
			t.Errorf("%d rows, want %d", rows, len(adversary.Levels()))
		}
		screenshot(t, ctx, fmt.Sprintf("adversary-list-%d", width))
		do(t, ctx, "open ack-then-drain", chromedp.Click(chromedp.CSS(`a[href="/adversary/ack-then-drain"]`)),
			chromedp.WaitVisible(chromedp.CSS(`.adversary-game[data-live="1"] a.adv-choice`)))
		run(t, ctx, "mark the page", chromedp.Evaluate[bool](`window.stayed = true`))
		for i, k := range r.Schedule {
			want := adversary.FormatSchedule(r.Schedule[:i+1])
			do(t, ctx, fmt.Sprintf("choice %d", i+1), chromedp.Click(chromedp.CSS(fmt.Sprintf(`.adversary-game a.adv-choice[data-choice="%d"]`, k))))
			waitFor(t, ctx, "the game after "+want, fmt.Sprintf(`document.querySelector(".adversary-game").dataset.schedule === %q && !document.querySelector(".adversary-game").hasAttribute("aria-busy")`, want))
			if i == len(r.Schedule)/2 {
				screenshot(t, ctx, fmt.Sprintf("adversary-game-%d", width))
			}
		}
		got := run(t, ctx, "the verdict", chromedp.Evaluate[string](`[document.querySelector(".adversary-game").dataset.won, window.stayed, location.search, document.querySelector(".adv-verdict").textContent, document.querySelector(".adv-saved").textContent].join(" | ")`))
		if !strings.HasPrefix(got, "true | true | ?s=") || !strings.Contains(got, "You broke it: "+r.Why) ||
			!strings.HasSuffix(got, fmt.Sprintf("Recorded in your progress: won in %d choices.", len(r.Schedule))) {
			t.Errorf("after the solver's schedule: %q", got)
		}
		rec.mu.Lock()
		if rec.won[l.Name] != len(r.Schedule) {
			t.Errorf("the record: %v", rec.won)
		}
		rec.mu.Unlock()
		run(t, ctx, "show the verdict", chromedp.Evaluate[bool](`(() => { document.querySelector(".adv-verdict").scrollIntoView({block: "center"}); return true; })()`))
		screenshot(t, ctx, fmt.Sprintf("adversary-won-%d", width))
		do(t, ctx, "ask the solver", chromedp.Click(chromedp.CSS(".adv-solver summary")), chromedp.WaitVisible(chromedp.CSS(".adv-solver-play")))
		screenshot(t, ctx, fmt.Sprintf("adversary-solver-%d", width))
		shorter := adversary.FormatSchedule(r.Schedule[:len(r.Schedule)-1])
		do(t, ctx, "undo", chromedp.Click(chromedp.CSS(".adversary-game a.adv-undo")))
		waitFor(t, ctx, "the game one choice back", fmt.Sprintf(`document.querySelector(".adversary-game").dataset.schedule === %q && document.querySelector(".adversary-game").dataset.won === "false"`, shorter))
		do(t, ctx, "back", chromedp.NavigateBack())
		waitFor(t, ctx, "the won game again", `document.querySelector(".adversary-game").dataset.won === "true" && window.stayed === true`)
		noErrors(t, errs)
	}
	do(t, browser(t, 1280, 900), "the list with the record", chromedp.Navigate(base+"/adversary"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-level="ack-then-drain"][data-status="won"]`)))
}
