package browser_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// garageProblems walks the first widget's garage through the positions of its
// run (every one of a short run; of a long one, about 300 spread over it and
// the first of every kind of event) and lists every text drawn smaller than 12 CSS pixels, outside the
// picture, or outside the board or house it labels.
const garageProblems = `(() => {
	const root = document.querySelector(".sacc-widget");
	const w = root.saccWidget;
	root.querySelector("[data-view=garage]").click();
	const svg = root.querySelector(".sw-garage");
	const out = new Set();
	const n = w.timeline.length, stride = Math.max(1, Math.ceil(n / 300));
	const at = new Set();
	for (let p = 0; p <= n; p += stride) at.add(p);
	const kinds = new Set();
	w.timeline.log.forEach((e) => { if (!kinds.has(e.kind)) { kinds.add(e.kind); at.add(e.seq); } });
	for (const p of at) {
		w.setPos(p);
		w.redraw();
		const box = svg.getBoundingClientRect();
		const k = box.width / svg.viewBox.baseVal.width;
		for (const t of svg.querySelectorAll("text")) {
			if (!t.textContent.trim()) continue;
			const px = parseFloat(getComputedStyle(t).fontSize) * k;
			const b = t.getBoundingClientRect();
			if (!b.width && !b.height) continue; // not drawn (a label the style sheet hides)
			const name = JSON.stringify(t.textContent);
			if (px < 12) out.add(name + " is " + px.toFixed(1) + " px");
			if (b.left < box.left - 0.5 || b.right > box.right + 0.5 || b.top < box.top - 0.5 || b.bottom > box.bottom + 0.5) out.add(name + " leaves the picture");
			const frame = t.closest(".sw-board, .sw-house");
			const r = frame && frame.querySelector(".sw-board-frame, .sw-wall");
			if (r && !t.matches(".sw-board > text:first-of-type")) {
				const f = r.getBoundingClientRect();
				if (b.left < f.left - 0.5 || b.right > f.right + 0.5) out.add(name + " leaves its " + (frame.matches(".sw-board") ? "board" : "house"));
			}
		}
	}
	return [...out].join("\n");
})()`

// TestGarageTextAtPhoneWidth: at 390 px every text of the garage is at least
// 12 px and stays inside the picture and inside the board or house it belongs
// to, at every position of chapter 00's run and of a run with a 32-slot ring.
func TestGarageTextAtPhoneWidth(t *testing.T) {
	base := server(t)
	for _, width := range []int{390, 1280} {
		ctx := browser(t, width, 900)
		errs := consoleErrors(ctx)
		for _, page := range []string{"/chapters/00-the-journey-of-one-job", "/chapters/13-capstone"} {
			do(t, ctx, "open "+page, chromedp.EmulateViewport(int64(width), 900), chromedp.Navigate(base+page),
				chromedp.WaitVisible(chromedp.CSS(widget+` [data-action="play"]`)))
			waitFor(t, ctx, "the run ends", `document.querySelector(".sacc-widget .sw-conn").dataset.state === "ended"`)
			if got := run(t, ctx, "measure the garage", chromedp.Evaluate[string](garageProblems)); got != "" {
				t.Errorf("%s at %d px:\n%s", page, width, got)
			}
		}
		if e := errs(); len(e) > 0 {
			t.Fatalf("JavaScript errors in the console:\n%s", strings.Join(e, "\n"))
		}
	}
}

// TestChapterTextOnThePhonesFirstScreen: at 390 px the chapter list folds into
// one line, so the first paragraph of every chapter starts high on the first
// screen; opening it lists every chapter. At 1280 px the list is the sidebar.
func TestChapterTextOnThePhonesFirstScreen(t *testing.T) {
	base := server(t)
	ctx := browser(t, 390, 844)
	errs := consoleErrors(ctx)
	do(t, ctx, "open the contents", chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("a[href*='/chapters/']")))
	pages := strings.Split(run(t, ctx, "list the chapters", chromedp.Evaluate[string](
		`[...document.querySelectorAll("main .chapter-list a")].map((a) => a.getAttribute("href")).join(" ")`)), " ")
	if len(pages) < 15 {
		t.Fatalf("the contents page lists %d chapters", len(pages))
	}
	for _, page := range pages {
		do(t, ctx, "open "+page, chromedp.Navigate(base+page), chromedp.WaitVisible(chromedp.CSS("article.chapter > p")))
		top := run(t, ctx, "where the text starts", chromedp.Evaluate[float64](
			`document.querySelector("article.chapter > p").getBoundingClientRect().top`))
		// The site's name, the folded list and the title take at most two
		// fifths of the screen: the rest is the chapter.
		if top > 0.4*844 {
			t.Errorf("%s: at 390 px the chapter's first paragraph starts at %.0f px of an 844 px screen", page, top)
		}
		if page == pages[6] {
			screenshot(t, ctx, "chapter06-phone-top-390")
		}
	}
	do(t, ctx, "open the chapter list", chromedp.Click(chromedp.CSS(".toc-phone > summary")))
	if n := run(t, ctx, "visible chapter links", chromedp.Evaluate[int](
		`[...document.querySelectorAll(".toc-phone .chapter-list a")].filter((a) => a.getBoundingClientRect().height > 0).length`)); n != len(pages) {
		t.Errorf("the opened chapter list shows %d links, want %d", n, len(pages))
	}
	screenshot(t, ctx, "chapter-list-open-390")

	wide := browser(t, 1280, 800)
	do(t, wide, "open a chapter wide", chromedp.Navigate(base+pages[6]), chromedp.WaitVisible(chromedp.CSS(".toc-sidebar .chapter-list")))
	if shown := run(t, wide, "the phone list", chromedp.Evaluate[bool](`getComputedStyle(document.querySelector(".toc-phone")).display !== "none"`)); shown {
		t.Error("at 1280 px the folded chapter list shows beside the sidebar")
	}
	if e := errs(); len(e) > 0 {
		t.Fatalf("JavaScript errors in the console:\n%s", strings.Join(e, "\n"))
	}
}

// patchedAsFresh steps the first widget's ring and garage views through a run
// and compares, at each position, the picture on the page (patched from the
// last one) with the same picture drawn afresh; it returns the first
// difference, or "". It also checks that patching kept the nodes.
const patchedAsFresh = `(async () => {
	const base = document.querySelector("script[type=module]").src;
	const dom = await import(new URL("dom.js", base).href);
	const ring = await import(new URL("views/ring.js", base).href);
	const garage = await import(new URL("views/garage.js", base).href);
	const { el } = await import(new URL("vnode.js", base).href);
	// canon writes a tree with its attributes in name order: patching may set
	// them in another order than drawing afresh does.
	const canon = (node) => node.nodeType === 3 ? JSON.stringify(node.data) :
		"<" + node.localName + [...node.attributes].map((a) => " " + a.name + "=" + JSON.stringify(a.value)).sort().join("") + ">" +
		[...node.childNodes].map(canon).join("") + "</>";
	const root = document.querySelector(".sacc-widget");
	const w = root.saccWidget;
	const n = w.timeline.length, stride = Math.max(1, Math.floor(n / 150));
	let kept = 0;
	for (const view of ["ring", "garage"]) {
		w.activate(view);
		for (let p = 0; p <= n; p += stride) {
			const before = root.querySelector(".sw-panel-" + view + " svg rect");
			w.setPos(p);
			w.redraw();
			const st = w.timeline.stateAt(p), ev = w.timeline.event(p);
			let page, fresh;
			if (view === "ring") {
				page = root.querySelector(".sw-panel-ring svg.sw-ring");
				fresh = dom.render(ring.picture(st, ev, p, w.env.ds, { id: "sw" + w.n + "-", wide: root.classList.contains("sw-wide"), anim: !dom.reducedMotion() }));
			} else {
				page = root.querySelector(".sw-garage > g:nth-of-type(1)");
				fresh = dom.render(el("g", null, garage.picture(st, ev, p, w.env.ds).scene), true);
			}
			const a = [...page.childNodes].map(canon).join(""), b = [...fresh.childNodes].map(canon).join("");
			if (a !== b) {
				let i = 0;
				while (a[i] === b[i]) i++;
				return view + " at " + p + ": on the page …" + a.slice(Math.max(0, i - 80), i + 80) + "…, drawn afresh …" + b.slice(Math.max(0, i - 80), i + 80) + "…";
			}
			if (before && before.isConnected) kept++;
		}
	}
	return kept ? "" : "no node survived a redraw";
})()`

// TestPicturesPatchedAsDrawnAfresh: the ring and garage pictures, drawn again at
// every step by patching the nodes already on the page, are exactly what
// drawing them afresh gives.
func TestPicturesPatchedAsDrawnAfresh(t *testing.T) {
	base := server(t)
	ctx := browser(t, 1280, 800, chromedp.Flag("force-prefers-reduced-motion", true))
	errs := consoleErrors(ctx)
	for _, page := range []string{"/chapters/00-the-journey-of-one-job", "/chapters/06-phase-bits", "/chapters/09-the-iommu"} {
		do(t, ctx, "open "+page, chromedp.Navigate(base+page), chromedp.WaitVisible(chromedp.CSS(widget+` [data-action="play"]`)))
		waitFor(t, ctx, "the run ends", `document.querySelector(".sacc-widget .sw-conn").dataset.state === "ended"`)
		if diff := run(t, ctx, "compare", chromedp.Evaluate[string](patchedAsFresh, chromedp.EvalAwaitPromise)); diff != "" {
			t.Fatalf("%s: %s", page, diff)
		}
	}
	if e := errs(); len(e) > 0 {
		t.Fatalf("JavaScript errors in the console:\n%s", strings.Join(e, "\n"))
	}
}

// traceListAgrees moves the first widget's trace view forward, back and by
// jumps, playing and paused, with and without a filter, and compares the rows
// on the page with traceAt's; it returns the first difference, or "".
const traceListAgrees = `(async () => {
	const base = document.querySelector("script[type=module]").src;
	const trace = await import(new URL("views/trace.js", base).href);
	const root = document.querySelector(".sacc-widget");
	const w = root.saccWidget;
	w.activate("trace");
	const input = root.querySelector(".sw-filter");
	const n = w.timeline.length;
	let seed = 5;
	const rnd = (k) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % k; };
	for (const q of ["", "cq", "dma"]) {
		input.value = q;
		let p = 0;
		for (let i = 0; i < 300; i++) {
			const m = rnd(10);
			p = m < 6 ? p + rnd(120) : m < 8 ? p - rnd(30) : rnd(n + 1);
			p = Math.max(0, Math.min(n, p));
			w.playing = rnd(3) === 0; // the short list of playback, or the long one
			w.setPos(p);
			w.dirty = true;
			w.redraw();
			const want = trace.traceAt(w.timeline.log, p, { q, sides: new Set(w.env.ds.sides), all: w.env.ds.sides.length },
				w.playing ? 24 : 250).rows.map((e) => e.seq).join(",");
			const got = [...root.querySelectorAll(".sw-trace li")].map((li) => li.dataset.seq).join(",");
			if (got !== want) return "filter " + JSON.stringify(q) + " at " + p + ": page " + got.slice(0, 200) + " want " + want.slice(0, 200);
			const cur = root.querySelectorAll(".sw-trace .is-current");
			if (cur.length > 1) return "two current rows at " + p;
		}
	}
	w.playing = false;
	return "";
})()`

// TestTraceListFollowsThePosition: the trace list on the page, kept up row by
// row as the position moves, always holds exactly the rows traceAt says.
func TestTraceListFollowsThePosition(t *testing.T) {
	base := server(t)
	ctx := browser(t, 1280, 800)
	errs := consoleErrors(ctx)
	do(t, ctx, "open chapter 06", chromedp.Navigate(base+"/chapters/06-phase-bits"), chromedp.WaitVisible(chromedp.CSS(widget+` [data-action="play"]`)))
	waitFor(t, ctx, "the run ends", `document.querySelector(".sacc-widget .sw-conn").dataset.state === "ended"`)
	if diff := run(t, ctx, "compare", chromedp.Evaluate[string](traceListAgrees, chromedp.EvalAwaitPromise)); diff != "" {
		t.Fatal(diff)
	}
	if e := errs(); len(e) > 0 {
		t.Fatalf("JavaScript errors in the console:\n%s", strings.Join(e, "\n"))
	}
}
