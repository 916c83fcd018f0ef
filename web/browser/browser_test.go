// Package browser_test drives the book in a real browser: headless Chromium,
// controlled with chromedp, against the whole server — chapters, assets and live
// sessions. Without a browser the test skips, unless SACCBOOK_BROWSER=required (as
// .ci/run sets it), which turns the skip into a failure.
package browser_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/chromedp/chromedp"

	saccbook "github.com/saccbook/saccbook"
	"github.com/saccbook/saccbook/chapters"
	"github.com/saccbook/saccbook/static"
	"github.com/saccbook/saccbook/web"
	"github.com/saccbook/saccbook/web/live"
)

func findBrowser(t *testing.T) string {
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
	t.Skip("no Chromium found (install Debian's chromium; set SACCBOOK_BROWSER=required to make this a failure)")
	return ""
}

// server starts the whole book on a loopback test server.
func server(t *testing.T) string { return serverWith(t, chapters.FS) }

// serverWith serves the given chapters with the real assets and live sessions.
func serverWith(t *testing.T, book fs.FS) string {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	hub := live.New(live.Options{AllowedOrigins: web.OriginPatterns(web.DefaultAllowedHosts()), Logger: quiet})
	h, err := web.NewHandler(web.Config{Chapters: book, Static: static.FS, Live: hub, Source: saccbook.Source,
		AllowedHosts: web.DefaultAllowedHosts(), Logger: quiet})
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

// browser starts headless Chromium with the flags a closed network needs, and
// any others given.
func browser(t *testing.T, width, height int, flags ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := findBrowser(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	)
	opts = append(opts, flags...)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelC()
		cancelA()
	})
	if err := chromedp.Do(ctx); err != nil { // start the browser without a deadline
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// consoleErrors collects every error the page reports (exceptions, console.error).
func consoleErrors(ctx context.Context) func() []string {
	var mu sync.Mutex
	var errs []string
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == "error" || m.Type == "assert" {
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

func run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

const widget = `.sacc-widget`

func seq(t *testing.T, ctx context.Context) int {
	t.Helper()
	v := run(t, ctx, "read data-seq", chromedp.Evaluate[string](`document.querySelector(".sacc-widget").dataset.seq`))
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("data-seq %q is not a number", v)
	}
	return n
}

// phases is the number of CQ slots drawn with phase 1, as the ring view shows it.
func phases(t *testing.T, ctx context.Context) int {
	return run(t, ctx, "count phase-1 slots", chromedp.Evaluate[int](`document.querySelectorAll(".sacc-widget .is-p1").length`))
}

// waitFor polls a JavaScript condition in the page.
func waitFor(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	run(t, ctx, what, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(20*time.Second)))
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	dir := os.Getenv("SACCBOOK_SCREENSHOTS")
	if dir == "" {
		return
	}
	buf := run(t, ctx, "screenshot", chromedp.CaptureScreenshot())
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLearnerPlaysStepsBackAndInspects is the learner's first minute: open chapter
// 00, press play, watch events arrive and a completion's phase change, pause,
// step back exactly one event, and run xp in the monitor console.
func TestLearnerPlaysStepsBackAndInspects(t *testing.T) {
	base := server(t)
	ctx := browser(t, 1280, 800)
	errs := consoleErrors(ctx)

	do(t, ctx, "open chapter 00", chromedp.Navigate(base+"/chapters/00-the-journey-of-one-job"),
		chromedp.WaitVisible(chromedp.CSS(widget+` [data-action="play"]`)))
	waitFor(t, ctx, "events arrive", `document.querySelector(".sacc-widget .sw-conn").dataset.state === "ended" || document.querySelector('.sacc-widget input[type=range]').max > 0`)
	if got := seq(t, ctx); got != 0 {
		t.Fatalf("the widget must start paused at 0, data-seq = %d", got)
	}
	before := phases(t, ctx)
	do(t, ctx, "set speed and play",
		chromedp.SetValue(chromedp.CSS(widget+" select"), "max"),
		chromedp.Click(chromedp.CSS(widget+` [data-action="play"]`)))
	waitFor(t, ctx, "data-seq advances past the completion", `Number(document.querySelector(".sacc-widget").dataset.seq) >= 70`)
	do(t, ctx, "pause", chromedp.Click(chromedp.CSS(widget+` [data-action="pause"]`)))
	if after := phases(t, ctx); after == before {
		t.Errorf("no CQ slot changed phase while playing (%d phase-1 slots before and after)", after)
	}
	at := seq(t, ctx)
	do(t, ctx, "step back", chromedp.Click(chromedp.CSS(widget+` [data-action="back"]`)))
	if got := seq(t, ctx); got != at-1 {
		t.Fatalf("back from %d gave data-seq %d", at, got)
	}
	do(t, ctx, "step", chromedp.Click(chromedp.CSS(widget+` [data-action="step"]`)))
	if got := seq(t, ctx); got != at {
		t.Fatalf("step from %d gave data-seq %d", at-1, got)
	}
	screenshot(t, ctx, "chapter00-ring-1280")

	do(t, ctx, "open the monitor",
		chromedp.Click(chromedp.CSS(widget+` [data-view="monitor"]`)),
		chromedp.WaitVisible(chromedp.CSS(widget+" .sw-monitor-in")),
		chromedp.SendKeys(chromedp.CSS(widget+" .sw-monitor-in"), "xp /4xw 0xb0018000\n"))
	waitFor(t, ctx, "xp output", `document.querySelector(".sacc-widget .sw-monitor-out").textContent.includes("0x10921b36")`)
	out := run(t, ctx, "monitor text", chromedp.Evaluate[string](`document.querySelector(".sacc-widget .sw-monitor-out").textContent`))
	if !strings.Contains(out, "00000000b0018000:") {
		t.Errorf("xp output not in QEMU's format:\n%s", out)
	}
	screenshot(t, ctx, "chapter00-monitor-1280")
	if e := errs(); len(e) > 0 {
		t.Fatalf("JavaScript errors in the console:\n%s", strings.Join(e, "\n"))
	}
}

// TestPhoneWidth loads the table of contents and a chapter at 375 px and checks
// that nothing errors and the widget fits.
func TestPhoneWidth(t *testing.T) {
	base := server(t)
	ctx := browser(t, 375, 800)
	errs := consoleErrors(ctx)
	do(t, ctx, "open the contents", chromedp.EmulateViewport(375, 800), chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("a[href*='/chapters/']")))
	screenshot(t, ctx, "contents-375")
	do(t, ctx, "open chapter 00", chromedp.Navigate(base+"/chapters/00-the-journey-of-one-job"),
		chromedp.WaitVisible(chromedp.CSS(widget+` [data-action="play"]`)),
		chromedp.Click(chromedp.CSS(widget+` [data-view="garage"]`)))
	overflow := run(t, ctx, "measure", chromedp.Evaluate[bool](`document.querySelector(".sacc-widget").getBoundingClientRect().right <= window.innerWidth + 1`))
	if !overflow {
		t.Error("the widget is wider than a 375 px screen")
	}
	screenshot(t, ctx, "chapter00-garage-375")
	if e := errs(); len(e) > 0 {
		t.Fatalf("JavaScript errors in the console:\n%s", strings.Join(e, "\n"))
	}
}

// TestSourceViewShowsTheDriverLine runs the driver scenario and checks that the
// source view shows a line of Go code from the software, not from the CPU model.
func TestSourceViewShowsTheDriverLine(t *testing.T) {
	base := serverWith(t, fstest.MapFS{"00-driver.md": {Data: []byte("# The driver\n\n```sacc-run scenario=driver\n```\n")}})
	ctx := browser(t, 1280, 800)
	errs := consoleErrors(ctx)
	do(t, ctx, "open a chapter", chromedp.Navigate(base+"/chapters/00-driver"),
		chromedp.WaitVisible(chromedp.CSS(widget+` [data-action="play"]`)))
	waitFor(t, ctx, "events arrive", `document.querySelector('.sacc-widget input[type=range]').max > 10`)
	do(t, ctx, "go to the doorbell and open the source view",
		chromedp.Click(chromedp.CSS(widget+` [data-view="source"]`)))
	for range 40 {
		do(t, ctx, "step", chromedp.Click(chromedp.CSS(widget+` [data-action="step"]`)))
	}
	waitFor(t, ctx, "source lines", `document.querySelectorAll(".sacc-widget .sw-src-row.is-current").length === 1`)
	text := run(t, ctx, "source text", chromedp.Evaluate[string](`document.querySelector(".sacc-widget .sw-source").textContent`))
	if !strings.Contains(text, "sacc/") || strings.Contains(text, "sacc/cpu/") {
		t.Errorf("source view should point past the CPU model into the software:\n%s", text)
	}
	screenshot(t, ctx, "chapter00-source-1280")
	if e := errs(); len(e) > 0 {
		t.Fatalf("JavaScript errors in the console:\n%s", strings.Join(e, "\n"))
	}
}

// seek moves the first widget to an event position, as dragging the scrub bar does.
func seek(t *testing.T, ctx context.Context, pos int) {
	t.Helper()
	// Until the widget next draws, the range input may not know the log's
	// length yet, and would clamp the value to its old end.
	waitFor(t, ctx, "the scrubber reaches the position", fmt.Sprintf(`Number(document.querySelector(".sacc-widget input[type=range]").max) >= %d`, pos))
	run(t, ctx, "seek", chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
		const r = document.querySelector(".sacc-widget input[type=range]");
		r.value = "%d";
		r.dispatchEvent(new Event("input"));
		return true;
	})()`, pos)))
	waitFor(t, ctx, "the position", fmt.Sprintf(`document.querySelector(".sacc-widget").dataset.seq === "%d"`, pos))
}

// TestMemoryTraceAndRegisterViews: after the doorbell of chapter 00's job, the
// memory view dumps the SQ and decodes its first descriptor from the manifest's
// layout, the trace view filters, and the registers view shows the device's.
func TestMemoryTraceAndRegisterViews(t *testing.T) {
	base := server(t)
	ctx := browser(t, 1280, 800)
	errs := consoleErrors(ctx)
	do(t, ctx, "open chapter 00", chromedp.Navigate(base+"/chapters/00-the-journey-of-one-job"),
		chromedp.WaitVisible(chromedp.CSS(widget+` [data-action="play"]`)))
	waitFor(t, ctx, "the run ends", `document.querySelector(".sacc-widget .sw-conn").dataset.state === "ended"`)
	seek(t, ctx, 65) // the doorbell

	do(t, ctx, "open the memory view and decode the first row",
		chromedp.Click(chromedp.CSS(widget+` [data-view="memory"]`)),
		chromedp.WaitVisible(chromedp.CSS(widget+" .sw-dump-row")),
		chromedp.Click(chromedp.CSS(widget+" .sw-dump-row")))
	waitFor(t, ctx, "the decoded descriptor", `document.querySelector(".sacc-widget .sw-decoded h4") !== null`)
	decoded := run(t, ctx, "decoded text", chromedp.Evaluate[string](`document.querySelector(".sacc-widget .sw-decoded").textContent`))
	for _, want := range []string{"Descriptor in SQ slot 0 at 0x100000", "opcode0x1 MEMCPY", "flags0x1 (interrupt)", "req_id0x1", "length82"} {
		if !strings.Contains(decoded, want) {
			t.Errorf("decoded descriptor lacks %q:\n%s", want, decoded)
		}
	}
	screenshot(t, ctx, "chapter00-memory-1280")

	do(t, ctx, "filter the trace",
		chromedp.Click(chromedp.CSS(widget+` [data-view="trace"]`)),
		chromedp.SendKeys(chromedp.CSS(widget+" .sw-filter"), "doorbell"))
	waitFor(t, ctx, "one row", `document.querySelectorAll(".sacc-widget .sw-trace li").length === 1`)
	kinds := run(t, ctx, "trace rows", chromedp.Evaluate[string](`[...document.querySelectorAll(".sacc-widget .sw-trace .sw-ev-kind")].map((e) => e.textContent).join(",")`))
	note := run(t, ctx, "trace note", chromedp.Evaluate[string](`document.querySelector(".sacc-widget .sw-trace-note").textContent`))
	if kinds != "sacc_doorbell" || note != "1 of 65 events shown." {
		t.Errorf("filtered trace: rows %q, note %q", kinds, note)
	}
	sides := run(t, ctx, "side boxes", chromedp.Evaluate[string](`[...document.querySelectorAll(".sacc-widget .sw-sides input")].map((e) => e.value).join(",")`))
	if sides != "cpu,bus,device,iommu,kernel" {
		t.Errorf("side filters %q", sides)
	}

	do(t, ctx, "open the registers", chromedp.Click(chromedp.CSS(widget+` [data-view="registers"]`)))
	waitFor(t, ctx, "register lines", `document.querySelector(".sacc-widget .sw-panel-registers pre").textContent.includes("SQ_SIZE")`)
	if e := errs(); len(e) > 0 {
		t.Fatalf("JavaScript errors in the console:\n%s", strings.Join(e, "\n"))
	}
}

// TestCPUChoiceComesFromTheCatalogue: a scenario that takes a CPU option offers
// its values, set to the scenario's default; one that takes none offers nothing.
func TestCPUChoiceComesFromTheCatalogue(t *testing.T) {
	base := serverWith(t, fstest.MapFS{"00-two.md": {Data: []byte("# Two\n\n```sacc-run scenario=barriers\n```\n\n```sacc-run scenario=job\n```\n")}})
	ctx := browser(t, 1280, 800)
	errs := consoleErrors(ctx)
	do(t, ctx, "open a chapter", chromedp.Navigate(base+"/chapters/00-two"),
		chromedp.WaitVisible(chromedp.CSS(widget+` [data-action="play"]`)))
	got := run(t, ctx, "CPU selects", chromedp.Evaluate[string](`[...document.querySelectorAll(".sacc-widget")].map((w) => {
		const s = w.querySelector("select.sw-cpu");
		return s ? s.value + ":" + [...s.options].map((o) => o.textContent).join("/") : "none";
	}).join(" | ")`))
	if want := "arm64:x86 (strong ordering)/arm64 (weak ordering) | none"; got != want {
		t.Errorf("CPU choices %q, want %q", got, want)
	}
	if e := errs(); len(e) > 0 {
		t.Fatalf("JavaScript errors in the console:\n%s", strings.Join(e, "\n"))
	}
}
