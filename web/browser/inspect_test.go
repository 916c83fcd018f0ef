package browser_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/chromedp/chromedp"
)

// statusOf is the inspection status line of a view of the first widget.
func statusOf(t *testing.T, ctx context.Context, view string) string {
	t.Helper()
	return run(t, ctx, "status line", chromedp.Evaluate[string](fmt.Sprintf(
		`document.querySelector(".sacc-widget .sw-panel-%s .sw-inspect-status").textContent`, view)))
}

// TestInspectionStatusLinesClear: the registers view's "Asking the machine…"
// turns into the answer after an answer, stays the answer when the view is
// drawn again at the same position (a tab switch), and never stays on "asking"
// after a new run or a dropped connection.
func TestInspectionStatusLinesClear(t *testing.T) {
	base := server(t)
	ctx := browser(t, 1280, 800)
	errs := consoleErrors(ctx)
	do(t, ctx, "open chapter 02", chromedp.Navigate(base+"/chapters/02-mmio"),
		chromedp.WaitVisible(chromedp.CSS(widget+` [data-action="play"]`)))
	waitFor(t, ctx, "the run ends", `document.querySelector(".sacc-widget .sw-conn").dataset.state === "ended"`)
	const answered = `document.querySelector(".sacc-widget .sw-panel-registers .sw-inspect-status").textContent === "At event %d."`

	seek(t, ctx, 40)
	waitFor(t, ctx, "the answer at 40", fmt.Sprintf(answered, 40))
	if !strings.Contains(run(t, ctx, "registers", chromedp.Evaluate[string](`document.querySelector(".sacc-widget .sw-panel-registers pre").textContent`)), "SCRATCH") {
		t.Error("the registers view shows no registers after its answer")
	}

	// Away and back at the same position: the view is drawn again, asks for what
	// it already shows, and must not claim to be asking.
	do(t, ctx, "to the trace and back",
		chromedp.Click(chromedp.CSS(widget+` [data-view="trace"]`)),
		chromedp.Click(chromedp.CSS(widget+` [data-view="registers"]`)))
	if got := statusOf(t, ctx, "registers"); got != "At event 40." {
		t.Errorf("after a tab switch at the same position the status is %q, want %q", got, "At event 40.")
	}

	// Steps: each ends in its own answer.
	for range 3 {
		do(t, ctx, "step", chromedp.Click(chromedp.CSS(widget+` [data-action="step"]`)))
	}
	waitFor(t, ctx, "the answer at 43", fmt.Sprintf(answered, 43))

	// A new run (another seed): the line waits for it, then answers in it.
	do(t, ctx, "another seed", chromedp.SetValue(chromedp.CSS(widget+" .sw-seed"), "2"))
	run(t, ctx, "the seed changes", chromedp.Evaluate[bool](`document.querySelector(".sacc-widget .sw-seed").dispatchEvent(new Event("change"))`))
	waitFor(t, ctx, "the new run's answer", `/^At event \d+\.$/.test(document.querySelector(".sacc-widget .sw-panel-registers .sw-inspect-status").textContent)`)

	// A dropped connection while a request is on its way: the line says what
	// happened, and once the widget has reconnected it answers again.
	waitFor(t, ctx, "the new run ends", `document.querySelector(".sacc-widget .sw-conn").dataset.state === "ended"`)
	waitFor(t, ctx, "the scrubber knows the new run", `Number(document.querySelector(".sacc-widget input[type=range]").max) >= 60`)
	run(t, ctx, "move and drop the connection", chromedp.Evaluate[bool](`(() => {
		const w = document.querySelector(".sacc-widget");
		const r = w.querySelector("input[type=range]");
		r.value = "60";
		r.dispatchEvent(new Event("input"));
		w.saccWidget.conn.ws.close();
		return true;
	})()`))
	seen := run(t, ctx, "the status right after the drop", chromedp.Poll[string](
		`(() => { const t = document.querySelector(".sacc-widget .sw-panel-registers .sw-inspect-status").textContent;
			return t.startsWith("Asking") ? null : t; })()`))
	if !regexp.MustCompile(`^(Could not ask the machine for event 60: .+\.|At event 60\.|Waiting for the machine to start…)$`).MatchString(seen) {
		t.Errorf("after the connection dropped the status says %q", seen)
	}
	waitFor(t, ctx, "the answer after reconnecting", fmt.Sprintf(answered, 60))
	if e := errs(); len(e) > 0 {
		t.Fatalf("JavaScript errors in the console:\n%s", strings.Join(e, "\n"))
	}
}

// TestMemoryViewSaysWhichAddress: with the IOMMU on, the SQ is programmed with a
// DMA address the device has not used yet; the memory view dumps it through the
// IOMMU (x), says so, and decodes the descriptor there. Where the physical
// address is known, it dumps physical memory and names the DMA address too.
func TestMemoryViewSaysWhichAddress(t *testing.T) {
	base := serverWith(t, fstest.MapFS{"00-dma.md": {Data: []byte("# DMA\n\n```sacc-run scenario=dma options=iommu=on views=memory,trace\n```\n")}})
	ctx := browser(t, 1280, 800)
	errs := consoleErrors(ctx)
	do(t, ctx, "open the chapter", chromedp.Navigate(base+"/chapters/00-dma"),
		chromedp.WaitVisible(chromedp.CSS(widget+` [data-action="play"]`)))
	waitFor(t, ctx, "the run ends", `document.querySelector(".sacc-widget .sw-conn").dataset.state === "ended"`)
	// The event just before the device's first fetch: the rings are programmed
	// and the descriptor written, and the IOMMU has translated nothing of them.
	fetch := run(t, ctx, "find the first fetch", chromedp.Evaluate[int](
		`document.querySelector(".sacc-widget").saccWidget.timeline.log.find((e) => e.kind === "sacc_fetch").seq`))
	seek(t, ctx, fetch-1)
	status := `document.querySelector(".sacc-widget .sw-panel-memory .sw-inspect-status").textContent`
	waitFor(t, ctx, "the dump's status", status+`.startsWith("DMA address 0x80000000 (x: through the IOMMU")`)
	do(t, ctx, "decode the first row", chromedp.Click(chromedp.CSS(widget+" .sw-dump-row")))
	decoded := run(t, ctx, "decoded", chromedp.Evaluate[string](`document.querySelector(".sacc-widget .sw-decoded").textContent`))
	if !strings.Contains(decoded, "Descriptor in SQ slot 0 at DMA address 0x80000000") || !strings.Contains(decoded, "opcode0x1 MEMCPY") {
		t.Errorf("decoded descriptor:\n%s", decoded)
	}
	screenshot(t, ctx, "memory-dma-1280")

	// After the fetch the IOMMU has translated the SQ's page (its walk's levels
	// are events of their own): physical memory, with the DMA address named.
	translated := run(t, ctx, "find the fetch's translation", chromedp.Evaluate[int](fmt.Sprintf(
		`document.querySelector(".sacc-widget").saccWidget.timeline.log.find((e) => e.kind === "iommu_translate" && e.seq > %d).seq`, fetch)))
	seek(t, ctx, translated)
	waitFor(t, ctx, "the physical dump", status+`.startsWith("Physical memory at 0x")`)
	got := run(t, ctx, "status", chromedp.Evaluate[string](status))
	if !strings.Contains(got, "(xp)") || !strings.Contains(got, "DMA address is 0x80000000") {
		t.Errorf("the physical dump's status %q does not say which addresses these are", got)
	}
	if e := errs(); len(e) > 0 {
		t.Fatalf("JavaScript errors in the console:\n%s", strings.Join(e, "\n"))
	}
}

// TestPhaseChapterMemoryOpensOnTheCQ: chapter 06's memory view dumps the CQ.
func TestPhaseChapterMemoryOpensOnTheCQ(t *testing.T) {
	base := server(t)
	ctx := browser(t, 1280, 800)
	errs := consoleErrors(ctx)
	do(t, ctx, "open chapter 06", chromedp.Navigate(base+"/chapters/06-phase-bits"),
		chromedp.WaitVisible(chromedp.CSS(widget+` [data-action="play"]`)))
	waitFor(t, ctx, "the run ends", `document.querySelector(".sacc-widget .sw-conn").dataset.state === "ended"`)
	cq := run(t, ctx, "the CQ's address", chromedp.Evaluate[string](`(() => {
		const w = document.querySelector(".sacc-widget").saccWidget;
		const st = w.timeline.stateAt(w.timeline.length);
		return "0x" + st.cqPhys.toString(16);
	})()`))
	seek(t, ctx, 200)
	do(t, ctx, "open the memory view", chromedp.Click(chromedp.CSS(widget+` [data-view="memory"]`)))
	waitFor(t, ctx, "the dump", `document.querySelector(".sacc-widget .sw-panel-memory .sw-inspect-status").textContent.startsWith("Physical memory at")`)
	addr := run(t, ctx, "the address", chromedp.Evaluate[string](`document.querySelector(".sacc-widget .sw-addr").value`))
	first := run(t, ctx, "the first row", chromedp.Evaluate[string](`document.querySelector(".sacc-widget .sw-dump-addr").textContent`))
	if addr != cq || !strings.HasSuffix(first, strings.TrimPrefix(cq, "0x")) {
		t.Errorf("the memory view opened at %s (first row %s), want the CQ at %s", addr, first, cq)
	}
	do(t, ctx, "decode the first row", chromedp.Click(chromedp.CSS(widget+" .sw-dump-row")))
	if d := run(t, ctx, "decoded", chromedp.Evaluate[string](`document.querySelector(".sacc-widget .sw-decoded h4").textContent`)); !strings.HasPrefix(d, "Completion in CQ slot 0") {
		t.Errorf("the first row decodes as %q, want a completion", d)
	}
	screenshot(t, ctx, "chapter06-memory-1280")
	if e := errs(); len(e) > 0 {
		t.Fatalf("JavaScript errors in the console:\n%s", strings.Join(e, "\n"))
	}
}
