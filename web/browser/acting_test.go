package browser_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/chromedp/chromedp"
)

// These tests drive widgets only through the DOM contract of docs/PROTOCOL.md:
// the widget root's data-widget, data-scenario, data-seq, data-total and
// data-diverge-seq; select[data-option], input[data-quirk], [data-marker] with
// data-marker-seq, [data-action=next][data-kind], [data-outcome].

// nth is the selector of the page's widget number n (data-widget, from 1).
func nth(n int) string { return fmt.Sprintf(`[data-widget="%d"]`, n) }

// attr reads an attribute of the first element matching sel.
func attr(t *testing.T, ctx context.Context, sel, name string) string {
	t.Helper()
	return run(t, ctx, "read "+name+" of "+sel, chromedp.Evaluate[string](fmt.Sprintf(
		`(() => { const e = document.querySelector(%q); return e ? (e.getAttribute(%q) ?? "") : "<none>"; })()`, sel, name)))
}

func num(t *testing.T, ctx context.Context, sel, name string) int {
	t.Helper()
	v := attr(t, ctx, sel, name)
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s of %s is %q, not a number", name, sel, v)
	}
	return n
}

// ended waits until widget w's run (and, with a bug, its comparison) is in and
// drawn: data-run="ended".
func ended(t *testing.T, ctx context.Context, w string) {
	t.Helper()
	waitFor(t, ctx, "the run of "+w+" ends", fmt.Sprintf(`document.querySelector(%q).dataset.run === "ended"`, w))
}

// setSelect chooses a value in a select as a reader does: the value, then change.
func setSelect(t *testing.T, ctx context.Context, sel, value string) {
	t.Helper()
	run(t, ctx, "choose "+value+" in "+sel, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
		const s = document.querySelector(%q);
		s.value = %q;
		s.dispatchEvent(new Event("change", { bubbles: true }));
		return s.value === %q;
	})()`, sel, value, value)))
}

func noErrors(t *testing.T, errs func() []string) {
	t.Helper()
	if e := errs(); len(e) > 0 {
		t.Fatalf("JavaScript errors in the console:\n%s", strings.Join(e, "\n"))
	}
}

// TestAnOptionChangesTheRun: chapter 05's ring size, as its text asks the reader
// to try, gives a new run at once: another number of events, another number of
// slots in the ring view, and the select keeps the choice.
func TestAnOptionChangesTheRun(t *testing.T) {
	base := server(t)
	ctx := browser(t, 1280, 900)
	errs := consoleErrors(ctx)
	w := nth(1)
	do(t, ctx, "open chapter 05", chromedp.Navigate(base+"/chapters/05-rings"),
		chromedp.WaitVisible(chromedp.CSS(w+` [data-action="play"]`)))
	ended(t, ctx, w)
	if got := attr(t, ctx, w, "data-scenario"); got != "rings" {
		t.Fatalf("data-scenario %q", got)
	}
	sel := w + ` select[data-option="size"]`
	if v := attr(t, ctx, sel, "data-option"); v != "size" {
		t.Fatalf("no size select in chapter 05's widget: %q", v)
	}
	values := run(t, ctx, "size values", chromedp.Evaluate[string](fmt.Sprintf(`[...document.querySelector(%q).options].map((o) => o.value).join(",")`, sel)))
	current := run(t, ctx, "size value", chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).value`, sel)))
	if !strings.Contains(values, "4") || current != "8" {
		t.Fatalf("size offers %q with %q chosen; want 4 among them and the default, 8", values, current)
	}
	// The reader is on a marker when the option changes: the new run opens there.
	do(t, ctx, "go to the tail's wrap", chromedp.Click(chromedp.CSS(w+` [data-marker="tail-wraps"]`)))
	slots := func() int {
		return run(t, ctx, "SQ slots", chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, w+" .sw-ring .sw-slot")))
	}
	before, slotsBefore := num(t, ctx, w, "data-total"), slots()

	setSelect(t, ctx, sel, "4")
	waitFor(t, ctx, "a new run", fmt.Sprintf(`(() => { const w = document.querySelector(%q);
		return w.dataset.run === "ended" && Number(w.dataset.total) !== %d; })()`, w, before))
	after := num(t, ctx, w, "data-total")
	if at, m := num(t, ctx, w, "data-seq"), num(t, ctx, w+` [data-marker="tail-wraps"]`, "data-marker-seq"); at != m {
		t.Errorf("after the change the widget is at #%d, not at the marker it was on (now #%d)", at, m)
	}
	seek(t, ctx, after) // the rings as they end up
	if got := slots(); slotsBefore != 0 && got == slotsBefore {
		t.Errorf("the ring view draws %d SQ slots with size 4 and with size 8", got)
	}
	if v := run(t, ctx, "size value", chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).value`, sel))); v != "4" {
		t.Errorf("the select shows %q after choosing 4", v)
	}
	t.Logf("rings: %d events with size=8, %d with size=4", before, after)
	noErrors(t, errs)
}

// TestABugIsComparedWithoutIt: switching chapter 05's no-cq-head on reruns the
// scenario with the bug and without it, takes the reader to the first event where
// they part, marks it on the scrubber, says what diverged, and the outcome —
// hidden until played — changes.
func TestABugIsComparedWithoutIt(t *testing.T) {
	base := server(t)
	ctx := browser(t, 1280, 900)
	errs := consoleErrors(ctx)
	w := nth(1)
	do(t, ctx, "open chapter 05", chromedp.Navigate(base+"/chapters/05-rings"),
		chromedp.WaitVisible(chromedp.CSS(w+` [data-action="play"]`)))
	ended(t, ctx, w)
	outcomeBefore := run(t, ctx, "the outcome", chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).textContent`, w+" [data-outcome]")))
	if attr(t, ctx, w, "data-diverge-seq") != "" {
		t.Fatal("data-diverge-seq is set before any bug is on")
	}

	box := w + ` input[type=checkbox][data-quirk="no-cq-head"]`
	run(t, ctx, "switch no-cq-head on", chromedp.Evaluate[bool](fmt.Sprintf(`(() => { const b = document.querySelector(%q); b.click(); return b.checked; })()`, box)))
	waitFor(t, ctx, "the divergence", fmt.Sprintf(`Number(document.querySelector(%q).dataset.divergeSeq) > 0`, w))
	d := num(t, ctx, w, "data-diverge-seq")
	waitFor(t, ctx, "the widget goes there", fmt.Sprintf(`document.querySelector(%q).dataset.seq === "%d"`, w, d))
	if m := num(t, ctx, w+` [data-marker="diverge"]`, "data-marker-seq"); m != d {
		t.Errorf("the divergence marker is at %d, data-diverge-seq %d", m, d)
	}
	sentence := run(t, ctx, "the sentence", chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).textContent`, w+" .sw-diverge")))
	if !strings.Contains(sentence, fmt.Sprintf("At #%d the runs part", d)) || !strings.Contains(sentence, "with no-cq-head") || !strings.Contains(sentence, "Without the bug") {
		t.Errorf("divergence sentence: %q", sentence)
	}
	widgetShot(t, ctx, w, "chapter05-diverge-1280")

	// The outcome is in the page but hidden until the run is played to its end.
	if vis := run(t, ctx, "outcome hidden", chromedp.Evaluate[bool](fmt.Sprintf(`(() => { const o = document.querySelector(%q); return !!o && o.hidden && o.offsetParent === null; })()`, w+" [data-outcome]"))); !vis {
		t.Fatal("the outcome is not in the page, or shows before the run was played")
	}
	setSelect(t, ctx, w+" select.sw-speed", "max")
	do(t, ctx, "play to the end", chromedp.Click(chromedp.CSS(w+` [data-action="play"]`)))
	waitFor(t, ctx, "the outcome shows", fmt.Sprintf(`(() => { const o = document.querySelector(%q); return !o.hidden && o.offsetParent !== null; })()`, w+" [data-outcome]"))
	outcome := run(t, ctx, "the outcome", chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).textContent`, w+" [data-outcome]")))
	if outcome == outcomeBefore || !strings.Contains(outcome, "never completed") {
		t.Errorf("the outcome with no-cq-head:\n%s\nbefore:\n%s", outcome, outcomeBefore)
	}

	// The other run, at the same place.
	with := num(t, ctx, w, "data-total")
	run(t, ctx, "show the run without the bug", chromedp.Evaluate[bool](fmt.Sprintf(`(() => { document.querySelector(%q).click(); return true; })()`, w+` [data-show="without"]`)))
	waitFor(t, ctx, "showing the baseline", fmt.Sprintf(`document.querySelector(%q).dataset.showing === "without"`, w))
	if without := num(t, ctx, w, "data-total"); without == with {
		t.Errorf("the runs with and without no-cq-head both have %d events", with)
	}
	widgetShot(t, ctx, w, "chapter05-without-1280")
	noErrors(t, errs)
}

// TestMarkersAndJumps: a marker's button takes the widget to its event; each
// "next …" control to the next event of its kind, the trace view agreeing.
func TestMarkersAndJumps(t *testing.T) {
	base := server(t)
	ctx := browser(t, 1280, 900)
	errs := consoleErrors(ctx)
	w := nth(1)
	do(t, ctx, "open chapter 00", chromedp.Navigate(base+"/chapters/00-the-journey-of-one-job"),
		chromedp.WaitVisible(chromedp.CSS(w+` [data-action="play"]`)))
	ended(t, ctx, w)
	waitFor(t, ctx, "markers", fmt.Sprintf(`document.querySelectorAll(%q).length >= 3`, w+" [data-marker][data-marker-seq]"))
	markers := run(t, ctx, "the markers", chromedp.Evaluate[[]string](fmt.Sprintf(`[...document.querySelectorAll(%q)].map((m) => m.dataset.marker + "=" + m.dataset.markerSeq)`, w+" [data-marker]")))
	for i, m := range markers {
		name, seqText, _ := strings.Cut(m, "=")
		do(t, ctx, "click marker "+name, chromedp.Click(chromedp.CSS(fmt.Sprintf(`%s [data-marker=%q]`, w, name))))
		if got := attr(t, ctx, w, "data-seq"); got != seqText {
			t.Fatalf("marker %d (%s) has data-marker-seq %s; after a click data-seq is %s", i, name, seqText, got)
		}
	}

	do(t, ctx, "the trace view", chromedp.Click(chromedp.CSS(w+` [data-view="trace"]`)))
	for _, kind := range []string{"doorbell", "completion", "interrupt"} {
		do(t, ctx, "reset", chromedp.Click(chromedp.CSS(w+` [data-action="reset"]`)))
		b := fmt.Sprintf(`%s [data-action="next"][data-kind=%q]`, w, kind)
		do(t, ctx, "next "+kind, chromedp.Click(chromedp.CSS(b)))
		at := num(t, ctx, w, "data-seq")
		current := run(t, ctx, "the current event", chromedp.Evaluate[string](fmt.Sprintf(`(() => {
			const li = document.querySelector(%q); return li ? li.dataset.seq + " " + li.querySelector(".sw-ev-kind").textContent : ""; })()`, w+" .sw-trace li.is-current")))
		want := map[string]string{"doorbell": "sacc_doorbell", "completion": "sacc_cq_post", "interrupt": "sacc_msix_send"}[kind]
		if current != fmt.Sprintf("%d %s", at, want) {
			t.Errorf("next %s went to #%d, where the trace shows %q; want %s", kind, at, current, want)
		}
		// Each next goes further, to another event of the kind, or stays.
		do(t, ctx, "next "+kind+" again", chromedp.Click(chromedp.CSS(b)))
		if again := num(t, ctx, w, "data-seq"); again < at {
			t.Errorf("next %s from #%d went back to #%d", kind, at, again)
		}
	}
	// A kind the run does not have is not offered.
	if vis := run(t, ctx, "next fault", chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q).hidden`, w+` [data-action="next"][data-kind="fault"]`))); !vis {
		t.Error("chapter 00's run has no fault, yet next fault is offered")
	}
	noErrors(t, errs)
}

// TestOutcomeWaitsForTheEnd: what the run reported is in the page from the
// start, hidden until the run has been played to its end.
func TestOutcomeWaitsForTheEnd(t *testing.T) {
	base := server(t)
	ctx := browser(t, 1280, 900)
	errs := consoleErrors(ctx)
	w := nth(1)
	do(t, ctx, "open chapter 00", chromedp.Navigate(base+"/chapters/00-the-journey-of-one-job"),
		chromedp.WaitVisible(chromedp.CSS(w+` [data-action="play"]`)))
	ended(t, ctx, w)
	o := w + " [data-outcome]"
	state := func() string {
		return run(t, ctx, "the outcome", chromedp.Evaluate[string](fmt.Sprintf(`(() => { const o = document.querySelector(%q);
			return o ? (o.hidden || o.offsetParent === null ? "hidden" : "shown") + ": " + o.textContent : "absent"; })()`, o)))
	}
	if got := state(); !strings.HasPrefix(got, "hidden: What the run reported") || !strings.Contains(got, "job 1 completed") {
		t.Fatalf("before play the outcome is %q; want it in the page, filled, and hidden", got)
	}
	setSelect(t, ctx, w+" select.sw-speed", "max")
	do(t, ctx, "play at full speed", chromedp.Click(chromedp.CSS(w+` [data-action="play"]`)))
	waitFor(t, ctx, "the end", fmt.Sprintf(`document.querySelector(%q).dataset.seq === document.querySelector(%q).dataset.total`, w, w))
	waitFor(t, ctx, "the outcome shows", fmt.Sprintf(`!document.querySelector(%q).hidden`, o))
	if got := state(); !strings.HasPrefix(got, "shown: ") {
		t.Fatalf("after playing to the end the outcome is %q", got)
	}
	noErrors(t, errs)
}

// TestFoldsPlayAsOneStep: the enumeration at the start of chapter 00's job is
// one step forward and one step back.
func TestFoldsPlayAsOneStep(t *testing.T) {
	base := server(t)
	ctx := browser(t, 1280, 900)
	errs := consoleErrors(ctx)
	w := nth(1)
	do(t, ctx, "open chapter 00", chromedp.Navigate(base+"/chapters/00-the-journey-of-one-job"),
		chromedp.WaitVisible(chromedp.CSS(w+` [data-action="play"]`)))
	ended(t, ctx, w)
	do(t, ctx, "step", chromedp.Click(chromedp.CSS(w+` [data-action="step"]`)))
	after := num(t, ctx, w, "data-seq")
	note := run(t, ctx, "the fold note", chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).textContent`, w+" .sw-fold-note")))
	if after < 8 || !strings.Contains(note, "enumeration") {
		t.Fatalf("one step from the start went to #%d (%q); the enumeration should fold into it", after, note)
	}
	do(t, ctx, "back", chromedp.Click(chromedp.CSS(w+` [data-action="back"]`)))
	if got := num(t, ctx, w, "data-seq"); got != 0 {
		t.Fatalf("back from #%d went to #%d, want 0", after, got)
	}
	noErrors(t, errs)
}

// TestEveryChapterReachesItsPoint opens every chapter and checks each widget:
// the contract's attributes are there, its markers are found in its run, and its
// default speed reaches its point of interest — where it starts, or its last
// marker — within about 20 s of pressing play at the start (counting a fold as
// one step). With SACCBOOK_SCREENSHOTS it saves each widget at 1280 and 390 px.
func TestEveryChapterReachesItsPoint(t *testing.T) {
	base := server(t)
	for _, width := range []int{1280, 390} {
		ctx := browser(t, width, 900, chromedp.Flag("force-prefers-reduced-motion", true))
		errs := consoleErrors(ctx)
		do(t, ctx, "open the contents", chromedp.EmulateViewport(int64(width), 900), chromedp.Navigate(base+"/"),
			chromedp.WaitVisible(chromedp.CSS("a[href*='/chapters/']")))
		slugs := run(t, ctx, "chapter links", chromedp.Evaluate[[]string](`[...new Set([...document.querySelectorAll("main a[href^='/chapters/']")].map((a) => a.getAttribute("href").slice(10)))].filter((s) => /^(0\d|1[0-3])-/.test(s))`))
		if len(slugs) != 14 {
			t.Fatalf("%d chapters 00-13 in the contents: %v", len(slugs), slugs)
		}
		for _, slug := range slugs {
			do(t, ctx, "open "+slug, chromedp.Navigate(base+"/chapters/"+slug),
				chromedp.WaitVisible(chromedp.CSS(nth(1)+` [data-action="play"]`)))
			n := run(t, ctx, "widgets", chromedp.Evaluate[int](`document.querySelectorAll("[data-widget]").length`))
			for i := 1; i <= n; i++ {
				w := nth(i)
				// Read when the run has ended, in one go: a reconnection may start it again.
				info := run(t, ctx, "widget facts", chromedp.Poll[map[string]any](fmt.Sprintf(`(() => {
					const w = document.querySelector(%q);
					if (w.dataset.run !== "ended") return null;
					const specs = JSON.parse(w.dataset.markers || "[]");
					const found = [...w.querySelectorAll("[data-marker][data-marker-seq]")].map((m) => [m.dataset.marker, Number(m.dataset.markerSeq)]);
					const folds = [...w.querySelectorAll(".sw-track-fold")].length;
					return { scenario: w.dataset.scenario, seq: Number(w.dataset.seq), total: Number(w.dataset.total),
						specs: specs.map((m) => m.name), found: found.map((f) => f[0]), last: Math.max(0, ...found.map((f) => f[1])),
						start: w.dataset.start, speed: w.querySelector("select.sw-speed").value, folds,
						ticks: w.saccWidget ? w.saccWidget.ticksToPoint() : -1, outcomeHidden: w.querySelector("[data-outcome]").hidden };
				})()`, w), chromedp.WithPollingTimeout(20*time.Second)))
				name := fmt.Sprintf("%s widget %d (%v)", slug, i, info["scenario"])
				if len(info["specs"].([]any)) == 0 {
					t.Errorf("%s has no markers", name)
				}
				if fmt.Sprint(info["specs"]) != fmt.Sprint(info["found"]) {
					t.Errorf("%s: markers %v, found in the run %v", name, info["specs"], info["found"])
				}
				if info["outcomeHidden"] != true && info["seq"].(float64) < info["total"].(float64) {
					t.Errorf("%s: the outcome shows before the run was played", name)
				}
				rate := map[string]float64{"max": 5000}[info["speed"].(string)]
				if rate == 0 {
					rate, _ = strconv.ParseFloat(info["speed"].(string), 64)
				}
				ticks := info["ticks"].(float64)
				if ticks < 0 || ticks/rate > 20 {
					t.Errorf("%s: %v steps to its point at %v events/s: more than 20 s", name, ticks, info["speed"])
				}
				if width == 1280 {
					t.Logf("%s: %v events, start %q at #%v, %v steps to its point, speed %v, %v folds", name, info["total"], info["start"], info["seq"], ticks, info["speed"], info["folds"])
				}
				widgetShot(t, ctx, w, fmt.Sprintf("%s-w%d-%d", slug[:2], i, width))
			}
		}
		noErrors(t, errs)
	}
}

// widgetShot saves a screenshot of one widget, when SACCBOOK_SCREENSHOTS names a
// directory.
func widgetShot(t *testing.T, ctx context.Context, sel, name string) {
	dir := os.Getenv("SACCBOOK_SCREENSHOTS")
	if dir == "" {
		return
	}
	do(t, ctx, "scroll to "+sel, chromedp.ScrollIntoView(chromedp.CSS(sel)))
	buf := run(t, ctx, "screenshot "+sel, chromedp.Screenshot(chromedp.CSS(sel)))
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHelloQuirksFromAPage: a block of a page of its own, to keep the other tests
// independent of the book's words: its Break-it box offers exactly the
// scenario's quirks, labelled with the registry's words.
func TestQuirkBoxesComeFromTheCatalogue(t *testing.T) {
	base := serverWith(t, fstest.MapFS{"00-two.md": {Data: []byte("# Two\n\n```sacc-run scenario=phases\n```\n\n```sacc-run scenario=job\n```\n")}})
	ctx := browser(t, 1280, 800)
	errs := consoleErrors(ctx)
	do(t, ctx, "open a chapter", chromedp.Navigate(base+"/chapters/00-two"),
		chromedp.WaitVisible(chromedp.CSS(nth(1)+` [data-action="play"]`)))
	got := run(t, ctx, "quirk boxes", chromedp.Evaluate[string](`[...document.querySelectorAll("[data-widget]")].map((w) =>
		[...w.querySelectorAll("input[type=checkbox][data-quirk]")].map((b) => b.dataset.quirk + (b.checked ? "+" : "") + ":" + b.closest("label").textContent).join(" / ") || "none").join(" | ")`))
	want := "no-phase-flip: no-phase-flip: the expected phase is not flipped on wrap / expected-phase-zero: expected-phase-zero: the driver's expected phase starts at 0 / phase-first: phase-first: the device writes the phase field before the completion body | none"
	if got != want {
		t.Errorf("quirk boxes\n%s\nwant\n%s", got, want)
	}
	noErrors(t, errs)
}
