package browser_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestPagesForTheEye saves, when SACCBOOK_SCREENSHOTS names a directory, the
// pages a change to the styles or the widgets must leave looking right: the
// contents and two chapters, at a desktop and a phone width, each widget opened
// part-way through its run. It checks only that nothing errors; the pictures are
// for a person to compare.
func TestPagesForTheEye(t *testing.T) {
	if os.Getenv("SACCBOOK_SCREENSHOTS") == "" {
		t.Skip("set SACCBOOK_SCREENSHOTS=DIR to save the screenshots")
	}
	base := server(t)
	for _, width := range []int{1280, 390} {
		// No animation: the same page gives the same picture, pixel for pixel.
		ctx := browser(t, width, 900, chromedp.Flag("force-prefers-reduced-motion", true))
		errs := consoleErrors(ctx)
		do(t, ctx, "open the contents", chromedp.EmulateViewport(int64(width), 900), chromedp.Navigate(base+"/"),
			chromedp.WaitVisible(chromedp.CSS("a[href*='/chapters/']")))
		screenshot(t, ctx, fmt.Sprintf("contents-%d", width))
		for _, ch := range []struct{ slug, name string }{
			{"00-the-journey-of-one-job", "chapter00"},
			{"06-phase-bits", "chapter06"},
		} {
			do(t, ctx, "open "+ch.slug, chromedp.Navigate(base+"/chapters/"+ch.slug),
				chromedp.WaitVisible(chromedp.CSS(widget+` [data-action="play"]`)))
			screenshot(t, ctx, fmt.Sprintf("%s-top-%d", ch.name, width))
			waitFor(t, ctx, "the run ends", `document.querySelector(".sacc-widget .sw-conn").dataset.state === "ended"`)
			// Near the end of the run the rings hold descriptors and completions.
			run(t, ctx, "seek near the end", chromedp.Evaluate[bool](`(() => {
				const w = document.querySelector(".sacc-widget");
				const r = w.querySelector("input[type=range]");
				r.value = String(Math.max(1, Number(r.max) - 10));
				r.dispatchEvent(new Event("input"));
				w.scrollIntoView();
				return true;
			})()`))
			waitFor(t, ctx, "the position shows", `Number(document.querySelector(".sacc-widget").dataset.seq) > 0`)
			screenshot(t, ctx, fmt.Sprintf("%s-widget-%d", ch.name, width))
		}
		if e := errs(); len(e) > 0 {
			t.Fatalf("JavaScript errors in the console at %d px: %v", width, e)
		}
	}
}
