package classroom

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The broadcast in real browsers: the instructor's Chromium leads, a second
// Chromium (another cookie jar: a student) follows in several tabs. Without a
// browser the test skips, unless SACCBOOK_BROWSER=required.

func findChromium(t *testing.T) string {
	for _, name := range []string{os.Getenv("SACCBOOK_CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "/usr/bin/chromium"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SACCBOOK_BROWSER") == "required" {
		t.Fatal("no Chromium found, and SACCBOOK_BROWSER=required")
	}
	t.Skip("no Chromium found (set SACCBOOK_BROWSER=required to make this a failure)")
	return ""
}

func chromium(t *testing.T, width, height int) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(findChromium(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// Background tabs must keep their timers: every tab is a student.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelC()
		cancelA()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

func pageErrors(ctx context.Context) func() []string {
	var mu sync.Mutex
	var errs []string
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == "error" {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("%s:%d %s", m.URL, m.Line+1, m))
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

func act(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, what, js string) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func until(t *testing.T, ctx context.Context, what, cond string) time.Duration {
	t.Helper()
	start := time.Now()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(tctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(5*time.Millisecond))); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return time.Since(start)
}

func snap(t *testing.T, ctx context.Context, name string) {
	dir := os.Getenv("SACCBOOK_SCREENSHOTS")
	if dir == "" {
		return
	}
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	buf, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

const (
	leadWidget   = `.class-lead .sacc-widget`
	followWidget = `.class-follow .sacc-widget`
)

// TestBroadcastInBrowsers: three student tabs follow the instructor's steps,
// scrub and change of scenario; one takes over, steps on its own while the
// others keep following, and rejoins at the instructor's position.
func TestBroadcastInBrowsers(t *testing.T) {
	c := newClass(t)
	teacher := chromium(t, 1280, 900)
	teacherErrs := pageErrors(teacher)
	act(t, teacher, "open the instructor URL, then the broadcast",
		chromedp.Navigate(c.srv.InstructorURL(c.ts.URL)),
		chromedp.WaitVisible(chromedp.CSS(`[data-role=dashboard]`)),
		chromedp.Navigate(c.ts.URL+"/class/broadcast"),
		chromedp.WaitVisible(chromedp.CSS(leadWidget+` [data-action="step"]`)))
	until(t, teacher, "the lead's run arrives", `document.querySelector("`+leadWidget+`").dataset.run === "ended"`)

	student := chromium(t, 1280, 900)
	act(t, student, "join", chromedp.Navigate(c.srv.JoinURL(c.ts.URL)),
		chromedp.WaitVisible(chromedp.CSS(`#class-name`)))
	snap(t, student, "classroom-join-1280")
	act(t, student, "give a name",
		chromedp.SendKeys(chromedp.CSS(`#class-name`), "ada"),
		chromedp.Click(chromedp.CSS(`.class-join button`)))
	time.Sleep(500 * time.Millisecond) // the form's navigation
	until(t, student, "the follow page after joining", `location.pathname === "/follow" && !!document.querySelector("[data-role=follow]")`)
	tabs := []context.Context{student}
	var errs []func() []string
	errs = append(errs, pageErrors(student))
	for range 2 {
		tab, cancel := chromedp.NewContext(student)
		t.Cleanup(cancel)
		errs = append(errs, pageErrors(tab))
		act(t, tab, "open the follow page", chromedp.Navigate(c.ts.URL+"/follow"), chromedp.WaitVisible(chromedp.CSS(`[data-role=follow]`)))
		tabs = append(tabs, tab)
	}
	leadSeq := func() int {
		return eval[int](t, teacher, "the lead's position", `Number(document.querySelector("`+leadWidget+`").dataset.seq)`)
	}
	atSeq := func(n int) string {
		return fmt.Sprintf(`(() => { const w = document.querySelector("%s"); return !!w && w.dataset.seq === "%d"; })()`, followWidget, n)
	}
	follows := func(what string, ctxs ...context.Context) {
		t.Helper()
		want := leadSeq()
		for i, tab := range ctxs {
			d := until(t, tab, fmt.Sprintf("%s: tab %d at %d", what, i+1, want), atSeq(want))
			t.Logf("%s: tab %d at event %d after %v", what, i+1, want, d.Round(time.Millisecond))
		}
	}
	follows("first position", tabs...)

	for range 5 {
		act(t, teacher, "step", chromedp.Click(chromedp.CSS(leadWidget+` [data-action="step"]`)))
	}
	follows("five steps", tabs...)
	act(t, teacher, "step back", chromedp.Click(chromedp.CSS(leadWidget+` [data-action="back"]`)))
	follows("a step back", tabs...)
	snap(t, tabs[1], "classroom-follow-1280")
	snap(t, teacher, "classroom-broadcast-1280")

	// Tab 1 takes over: it steps on its own, the others stay with the lead.
	act(t, tabs[0], "take over", chromedp.Click(chromedp.CSS(`[data-action="take-over"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-action="rejoin"]`)))
	own := eval[int](t, tabs[0], "position at take-over", `Number(document.querySelector("`+followWidget+`").dataset.seq)`)
	for range 3 {
		act(t, tabs[0], "step alone", chromedp.Click(chromedp.CSS(followWidget+` [data-action="step"]`)))
	}
	act(t, teacher, "back twice", chromedp.Click(chromedp.CSS(leadWidget+` [data-action="back"]`)),
		chromedp.Click(chromedp.CSS(leadWidget+` [data-action="back"]`)))
	follows("the lead goes back", tabs[1:]...)
	time.Sleep(300 * time.Millisecond) // a follower would have moved by now
	if got := eval[string](t, tabs[0], "own position", `document.querySelector("`+followWidget+`").dataset.seq`); got != strconv.Itoa(own+3) {
		t.Errorf("the tab that took over is at %s, want its own %d", got, own+3)
	}
	act(t, tabs[0], "rejoin", chromedp.Click(chromedp.CSS(`[data-action="rejoin"]`)))
	follows("rejoined", tabs[0])

	// Another scenario: every follower builds the same run.
	act(t, teacher, "change the scenario", chromedp.SetValue(chromedp.CSS(`[data-action=scenario]`), "job"))
	if _, err := chromedp.Run(teacher, chromedp.Evaluate[bool](`document.querySelector("[data-action=scenario]").dispatchEvent(new Event("change")), true`)); err != nil {
		t.Fatal(err)
	}
	until(t, teacher, "the new run", `document.querySelector("`+leadWidget+`").dataset.scenario === "job" && document.querySelector("`+leadWidget+`").dataset.run === "ended"`)
	for range 4 {
		act(t, teacher, "step", chromedp.Click(chromedp.CSS(leadWidget+` [data-action="step"]`)))
	}
	for i, tab := range tabs {
		until(t, tab, fmt.Sprintf("tab %d on the new scenario", i+1), `document.querySelector("`+followWidget+`").dataset.scenario === "job"`)
	}
	follows("the new scenario", tabs...)

	// A student shares a run from the browser; the instructor opens it where
	// it failed.
	rec := filepath.Join(t.TempDir(), "01-find-device.json")
	if err := os.WriteFile(rec, []byte(`{"exercise":"01-find-device","tests":[{"name":"TestScan","failed":true}],"test":"TestScan","failed":true,`+
		`"message":"no device","fail_seq":2,"events":[{"seq":1,"t":0,"kind":"pci_cfg_read","side":"bus","args":{"dev":0,"reg":0,"size":4,"val":4294967295},"text":"x"},`+
		`{"seq":2,"t":5,"kind":"pci_cfg_read","side":"bus","args":{"dev":0,"reg":0,"size":4,"val":4294967295},"text":"y"},`+
		`{"seq":3,"t":9,"kind":"pci_cfg_read","side":"bus","args":{"dev":0,"reg":0,"size":4,"val":4294967295},"text":"z"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	act(t, tabs[0], "share a run", chromedp.Navigate(c.ts.URL+"/share"),
		chromedp.WaitVisible(chromedp.CSS(`#class-run`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#class-run`), []string{rec}),
		chromedp.Click(chromedp.CSS(`.class-share button`)))
	until(t, tabs[0], "shared", `document.querySelector("[data-role=share]").dataset.shared === "true"`)
	snap(t, tabs[0], "classroom-share-1280")
	act(t, teacher, "the shared run from the dashboard", chromedp.Navigate(c.ts.URL+"/class/"),
		chromedp.Click(chromedp.CSS(`[data-role=shares] a`)),
		chromedp.WaitVisible(chromedp.CSS(`.sacc-widget [data-action="step"]`)))
	until(t, teacher, "the shared run opens where it failed", `document.querySelector(".sacc-widget").dataset.run === "ended" && document.querySelector(".sacc-widget").dataset.seq === "2"`)
	until(t, teacher, "the widget names whose run it is", `document.querySelector(".sacc-widget .sw-title").textContent === "ada's run of 01-find-device"`)
	snap(t, teacher, "classroom-shared-run-1280")

	// The dashboard, with a few students' work on it.
	for i, name := range []string{"grace", "linus", "barbara"} {
		e := c.join(name)
		at := c.clock().Add(time.Duration(i) * time.Minute)
		body, _ := json.Marshal([]Report{exerciseReport("01-find-device", "done", 5, 0, "", "", at),
			exerciseReport("02-ring", []string{"failing", "started", "failing"}[i], 6, 2*(1-i%2), "TestWrap", "sacc_phase_flip", at)})
		if code, msg := c.do("POST", "/api/class/report", e.Token, body); code != http.StatusOK {
			t.Fatalf("report: %d %s", code, msg)
		}
	}
	c.advance(20 * time.Minute)
	act(t, teacher, "the dashboard", chromedp.Navigate(c.ts.URL+"/class/"), chromedp.WaitVisible(chromedp.CSS(`[data-role=dashboard]`)))
	snap(t, teacher, "classroom-dashboard-1280")
	act(t, teacher, "narrow", chromedp.EmulateViewport(390, 844))
	snap(t, teacher, "classroom-dashboard-390")

	// The phone width (the screenshot a person looks at).
	act(t, tabs[1], "narrow", chromedp.EmulateViewport(390, 844))
	snap(t, tabs[1], "classroom-follow-390")
	for i, e := range append(errs, teacherErrs) {
		if got := e(); len(got) > 0 {
			t.Errorf("page %d: JavaScript errors:\n%s", i, strings.Join(got, "\n"))
		}
	}
}
