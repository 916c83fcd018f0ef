package browser_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/scenario"
	"github.com/saccbook/saccbook/sacc/trace"
)

// events runs a scenario as a widget does (seed 1) and returns its log.
func events(t *testing.T, name string, options map[string]string) []trace.Event {
	t.Helper()
	s, ok := scenario.Find(name)
	if !ok {
		t.Fatalf("no scenario %s", name)
	}
	m, err := machine.New(machine.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var buf trace.Buffer
	m.Tracer().Attach(&buf)
	if err := s.Run(m, &scenario.Env{Log: io.Discard, Options: options}); err != nil {
		t.Fatal(err)
	}
	return buf.Events
}

// nthSeq is the seq of the n-th (from 1) event of a kind; 0 if there is none.
func nthSeq(evs []trace.Event, k trace.Kind, n int) int {
	for _, ev := range evs {
		if ev.Kind == k {
			if n--; n == 0 {
				return int(ev.Seq)
			}
		}
	}
	return 0
}

// issueOfFirstDoorbell is the moment the CPU issued the first doorbell
// (cpu_mmio_write of SQ_TAIL), before it landed at the device.
func issueOfFirstDoorbell(evs []trace.Event) int {
	issue := 0
	for _, ev := range evs {
		switch {
		case ev.Kind == trace.CPUMMIOWrite && ev.Args[0] == 0 && ev.Args[1] == sacc.RegSQTail:
			issue = int(ev.Seq)
		case ev.Kind == trace.Doorbell:
			return issue
		}
	}
	return issue
}

// seekIn moves the i-th widget of the page to pos and waits for it to show it.
func seekIn(t *testing.T, ctx context.Context, i, pos int) {
	t.Helper()
	// The range input learns the log's length when the widget next draws: a
	// value set before that would be clamped to the old end.
	waitLong(t, ctx, "the scrubber reaches the position", fmt.Sprintf(
		`Number(document.querySelectorAll(".sacc-widget")[%d].querySelector("input[type=range]").max) >= %d`, i, pos))
	run(t, ctx, "seek", chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
		const w = document.querySelectorAll(".sacc-widget")[%d];
		const r = w.querySelector("input[type=range]");
		r.value = "%d";
		r.dispatchEvent(new Event("input"));
		w.scrollIntoView();
		return true;
	})()`, i, pos)))
	waitLong(t, ctx, "the position", fmt.Sprintf(`document.querySelectorAll(".sacc-widget")[%d].dataset.seq === "%d"`, i, pos))
}

// waitLong polls a condition for up to two minutes: these pages re-execute runs
// on the server and draw large pictures, and on a loaded machine (the whole test
// suite on two cores) that can take longer than waitFor's 20 s.
func waitLong(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := chromedp.Run(tctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(2*time.Minute))); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// ringInfo is what `info rings` says: each slot's owner, the indices and the
// device's phase, and each CQ entry's phase.
type ringInfo struct {
	sqOwners, cqOwners, cqPhases []string
	sqHead, sqTail, cqHead       string
	cqTail, phase                string
}

var (
	sqLine  = regexp.MustCompile(`^SQ at .*, (\d+) slots, sq_head=(\d+) sq_tail=(\d+):`)
	cqLine  = regexp.MustCompile(`^CQ at .*, (\d+) slots, cq_head=(\d+) cq_tail=(\d+), device phase (\d)`)
	slotRow = regexp.MustCompile(`^\s+(\d+) (driver|device) (.*)$`)
)

func parseInfoRings(t *testing.T, out string) ringInfo {
	t.Helper()
	var r ringInfo
	inCQ := false
	for _, line := range strings.Split(out, "\n") {
		if m := sqLine.FindStringSubmatch(line); m != nil {
			r.sqHead, r.sqTail = m[2], m[3]
			continue
		}
		if m := cqLine.FindStringSubmatch(line); m != nil {
			r.cqHead, r.cqTail, r.phase = m[2], m[3], m[4]
			inCQ = true
			continue
		}
		m := slotRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if !inCQ {
			r.sqOwners = append(r.sqOwners, m[2])
			continue
		}
		r.cqOwners = append(r.cqOwners, m[2])
		f := strings.Fields(m[3])
		phase := ""
		for k := 4; k < len(f); k++ { // req_id result_len status name… phase this-lap
			if f[k] == "0" || f[k] == "1" {
				phase = f[k]
				break
			}
		}
		r.cqPhases = append(r.cqPhases, phase)
	}
	if r.sqHead == "" || r.cqHead == "" {
		t.Fatalf("info rings shows no rings:\n%s", out)
	}
	return r
}

// inspectRings asks the widget's own Monitor tab for info rings at its current
// position, as a learner would type it.
func inspectRings(t *testing.T, ctx context.Context) string {
	t.Helper()
	do(t, ctx, "open the monitor", chromedp.Click(chromedp.CSS(widget+` [data-view="monitor"]`)))
	before := run(t, ctx, "monitor output", chromedp.Evaluate[int](`document.querySelectorAll(".sacc-widget .sw-monitor-out span").length`))
	run(t, ctx, "type info rings", chromedp.Evaluate[bool](`(() => {
		const i = document.querySelector(".sacc-widget .sw-monitor-in");
		i.value = "info rings";
		i.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
		return true;
	})()`))
	waitLong(t, ctx, "the answer", fmt.Sprintf(`document.querySelectorAll(".sacc-widget .sw-monitor-out span").length >= %d`, before+2))
	out := run(t, ctx, "the answer's text", chromedp.Evaluate[string](`[...document.querySelectorAll(".sacc-widget .sw-monitor-out span")].at(-1).textContent`))
	do(t, ctx, "back to the rings", chromedp.Click(chromedp.CSS(widget+` [data-view="ring"]`)))
	return out
}

// ringDOM is what the ring view draws: each visible slot's owner, each CQ
// entry's phase, and the indices.
func ringDOM(t *testing.T, ctx context.Context) map[string]string {
	t.Helper()
	waitLong(t, ctx, "the ring drawn", `document.querySelector(".sacc-widget svg.sw-ring [data-ring]") !== null`)
	js := `(() => {
		const svg = document.querySelector(".sacc-widget svg.sw-ring");
		const o = {};
		for (const k of ["sq-head", "sq-tail", "cq-head", "cq-tail", "phase", "driver-head", "driver-phase"]) o[k] = svg.getAttribute("data-" + k);
		for (const g of svg.querySelectorAll("[data-ring]")) {
			const k = g.dataset.ring + g.dataset.slot;
			o[k] = g.dataset.owner;
			if (g.dataset.ring === "cq") { o[k + "-phase"] = g.dataset.phase; o[k + "-entry"] = g.dataset.entry; }
		}
		return JSON.stringify(o);
	})()`
	s := run(t, ctx, "read the ring view", chromedp.Evaluate[string](js))
	m := map[string]string{}
	for _, kv := range strings.Split(strings.Trim(s, "{}"), ",") {
		k, v, _ := strings.Cut(kv, ":")
		m[strings.Trim(k, `"`)] = strings.Trim(v, `"`)
	}
	return m
}

// TestRingAgreesWithTheMonitor: at chosen positions of two runs — a doorbell
// overtaking its descriptor on arm64, and three laps of a CQ — the ring view's
// SQ and CQ ownership, indices, device phase and entries' phases are what the
// widget's own monitor answers to `info rings` at the same position, and the
// driver's head and expected phase are the last driver_cq's.
func TestRingAgreesWithTheMonitor(t *testing.T) {
	cases := []struct {
		scenario string
		options  map[string]string
		fence    string
		at       func(evs []trace.Event) []int
	}{
		{"barriers", map[string]string{"cpu": "arm64", "wmb": "off"}, "scenario=barriers options=cpu=arm64,wmb=off", func(evs []trace.Event) []int {
			bell := nthSeq(evs, trace.Doorbell, 1)
			return []int{bell - 1, bell, nthSeq(evs, trace.Fetch, 1), nthSeq(evs, trace.Descriptor, 1), nthSeq(evs, trace.CQPost, 1),
				nthSeq(evs, trace.DriverCQ, 2), nthSeq(evs, trace.Doorbell, 2)}
		}},
		{"phases", nil, "scenario=phases", func(evs []trace.Event) []int {
			return []int{nthSeq(evs, trace.CQPost, 4), nthSeq(evs, trace.PhaseFlip, 1), nthSeq(evs, trace.DriverCQ, 5),
				nthSeq(evs, trace.CQPost, 6), nthSeq(evs, trace.CQHeadWrite, 6), nthSeq(evs, trace.PhaseFlip, 2)}
		}},
	}
	for _, c := range cases {
		t.Run(c.scenario, func(t *testing.T) {
			evs := events(t, c.scenario, c.options)
			book := fstest.MapFS{"00-rings.md": {Data: []byte("# Rings\n\n```sacc-run " + c.fence + " views=ring,monitor\n```\n")}}
			base := serverWith(t, book)
			ctx := browser(t, 1280, 900)
			errs := consoleErrors(ctx)
			do(t, ctx, "open the page", chromedp.Navigate(base+"/chapters/00-rings"),
				chromedp.WaitVisible(chromedp.CSS(widget+` [data-action="play"]`)))
			waitLong(t, ctx, "the run ends", `document.querySelector(".sacc-widget .sw-conn").dataset.state === "ended"`)
			for _, pos := range c.at(evs) {
				if pos <= 0 {
					t.Fatalf("a chosen position is missing from the run")
				}
				seekIn(t, ctx, 0, pos)
				info := parseInfoRings(t, inspectRings(t, ctx))
				dom := ringDOM(t, ctx)
				where := fmt.Sprintf("event %d (%s)", pos, evs[pos-1].Kind)
				for k, want := range map[string]string{"sq-head": info.sqHead, "sq-tail": info.sqTail, "cq-head": info.cqHead,
					"cq-tail": info.cqTail, "phase": info.phase} {
					if dom[k] != want {
						t.Errorf("%s: the view's %s is %q, info rings says %q", where, k, dom[k], want)
					}
				}
				for i, want := range info.sqOwners {
					got := dom[fmt.Sprintf("sq%d", i)]
					if (got == "device") != (want == "device") || got == "" {
						t.Errorf("%s: SQ slot %d drawn %q, info rings says %s", where, i, got, want)
					}
				}
				for i, want := range info.cqOwners {
					if got := dom[fmt.Sprintf("cq%d", i)]; got != want {
						t.Errorf("%s: CQ slot %d drawn %q, info rings says %s", where, i, got, want)
					}
					if got := dom[fmt.Sprintf("cq%d-phase", i)]; got != info.cqPhases[i] {
						t.Errorf("%s: CQ slot %d phase drawn %q, memory holds %s", where, i, got, info.cqPhases[i])
					}
				}
				// The driver's side, which info rings cannot know: the last driver_cq.
				var head, phase string
				for _, ev := range evs[:pos] {
					if ev.Kind == trace.DriverCQ {
						head, phase = strconv.FormatUint(ev.Args[0], 10), strconv.FormatUint(ev.Args[1], 10)
					}
				}
				if dom["driver-head"] != head || dom["driver-phase"] != phase {
					t.Errorf("%s: the driver is drawn at head %q expecting %q; driver_cq says %s, %s", where, dom["driver-head"], dom["driver-phase"], head, phase)
				}
			}
			if e := errs(); len(e) > 0 {
				t.Fatalf("JavaScript errors: %v", e)
			}
		})
	}
}

// TestNewPicturesRender: each new view draws its run, at a position where it has
// something to say, without a console error.
func TestNewPicturesRender(t *testing.T) {
	cases := []struct {
		view, fence string
		scenario    string
		options     map[string]string
		pos         func(evs []trace.Event) int
		check       string // a JavaScript condition on the panel
	}{
		{"cpu", "scenario=barriers options=cpu=arm64,wmb=off", "barriers", map[string]string{"cpu": "arm64", "wmb": "off"},
			func(evs []trace.Event) int { return nthSeq(evs, trace.Doorbell, 1) },
			`Number(p.querySelector("svg.sw-sb").dataset.pending) >= 1 && p.textContent.includes("Doorbell overtook the descriptor")`},
		{"iommu", "scenario=iommu", "iommu", nil,
			func(evs []trace.Event) int { return nthSeq(evs, trace.IOMMUFault, 1) },
			`p.textContent.includes("Blocked:") && p.querySelectorAll("[data-level]").length >= 1`},
		{"bypass", "scenario=bypass-tour", "bypass-tour", nil,
			func(evs []trace.Event) int { return nthSeq(evs, trace.Doorbell, 3) },
			`p.textContent.includes("doorbell page (MMIO)") && p.querySelector("[data-place=process]") !== null`},
		{"config", "scenario=find-device", "find-device", nil,
			func(evs []trace.Event) int { return nthSeq(evs, trace.BARMap, 2) },
			`p.textContent.includes("BAR0: 8 KiB") && p.querySelector("[data-field=vendor_id].is-read") !== null`},
		{"results", "scenario=capstone", "capstone", nil,
			func(evs []trace.Event) int { return len(evs) },
			`Number(p.querySelector("svg.sw-chart").dataset.results) === 5`},
	}
	for _, c := range cases {
		t.Run(c.view, func(t *testing.T) {
			evs := events(t, c.scenario, c.options)
			pos := c.pos(evs)
			book := fstest.MapFS{"00-view.md": {Data: []byte("# A view\n\n```sacc-run " + c.fence + " views=" + c.view + "\n```\n")}}
			base := serverWith(t, book)
			for _, width := range []int{1280, 390} {
				ctx := browser(t, width, 900)
				errs := consoleErrors(ctx)
				do(t, ctx, "open the page", chromedp.EmulateViewport(int64(width), 900), chromedp.Navigate(base+"/chapters/00-view"),
					chromedp.WaitVisible(chromedp.CSS(widget+` [data-action="play"]`)))
				waitLong(t, ctx, "the run ends", `document.querySelector(".sacc-widget .sw-conn").dataset.state === "ended"`)
				seekIn(t, ctx, 0, pos)
				waitLong(t, ctx, c.view+" says what it should at event "+strconv.Itoa(pos),
					`(() => { const p = document.querySelector(".sacc-widget [role=tabpanel]:not([hidden])"); return !!p && `+c.check+`; })()`)
				if e := errs(); len(e) > 0 {
					t.Fatalf("%d px: JavaScript errors: %v", width, e)
				}
			}
		})
	}
}

// TestPicturesForTheEye saves, when SACCBOOK_SCREENSHOTS names a directory, the
// chapters whose pictures this book draws for the mechanisms, at 1280 and 390
// px, each widget named here moved to the moment its picture is about.
func TestPicturesForTheEye(t *testing.T) {
	if os.Getenv("SACCBOOK_SCREENSHOTS") == "" {
		t.Skip("set SACCBOOK_SCREENSHOTS=DIR to save the screenshots")
	}
	type shot struct {
		slug     string
		widget   int
		scenario string
		options  map[string]string
		view     string
		pos      func(evs []trace.Event) int
		name     string
	}
	shots := []shot{
		{"01-finding-the-device", 0, "find-device", nil, "config", func(e []trace.Event) int { return nthSeq(e, trace.ConfigRead, 36) }, "chapter01-config"},
		{"05-rings", 0, "rings", nil, "ring", func(e []trace.Event) int { return nthSeq(e, trace.Doorbell, 2) + 3 }, "chapter05-ring"},
		{"06-phase-bits", 0, "phases", nil, "ring", func(e []trace.Event) int { return nthSeq(e, trace.DriverCQ, 6) }, "chapter06-ring"},
		{"07-ordering-and-coherency", 1, "barriers", map[string]string{"cpu": "arm64", "wmb": "off"}, "cpu", func(e []trace.Event) int { return nthSeq(e, trace.Doorbell, 1) }, "chapter07-storebuffer"},
		{"07-ordering-and-coherency", 1, "barriers", map[string]string{"cpu": "arm64", "wmb": "off"}, "ring", func(e []trace.Event) int { return nthSeq(e, trace.Doorbell, 1) }, "chapter07-ring"},
		{"07-ordering-and-coherency", 0, "barriers", nil, "cpu", func(e []trace.Event) int { return nthSeq(e, trace.Doorbell, 1) - 1 }, "chapter07-wmb"},
		{"07-ordering-and-coherency", 1, "barriers", map[string]string{"cpu": "arm64", "wmb": "off"}, "cpu", issueOfFirstDoorbell, "chapter07-issue"},
		{"07-ordering-and-coherency", 2, "dma-sync", nil, "cpu", func(e []trace.Event) int { return nthSeq(e, trace.CPUStoreCached, 6) }, "chapter07-cache"},
		{"09-the-iommu", 0, "iommu", nil, "iommu", func(e []trace.Event) int { return nthSeq(e, trace.IOMMUFault, 1) }, "chapter09-fault"},
		{"09-the-iommu", 0, "iommu", nil, "iommu", func(e []trace.Event) int { return nthSeq(e, trace.IOMMUInvalidate, 3) - 1 }, "chapter09-stale"},
		{"10-kernel-bypass", 0, "bypass-tour", nil, "bypass", func(e []trace.Event) int { return nthSeq(e, trace.Doorbell, 3) }, "chapter10-bypass"},
		{"13-capstone", 0, "capstone", nil, "results", func(e []trace.Event) int { return len(e) }, "chapter13-results"},
		{"13-capstone", 0, "capstone", nil, "ring", func(e []trace.Event) int { return nthSeq(e, trace.CQPost, 40) }, "chapter13-ring"},
	}
	base := server(t)
	for _, width := range []int{1280, 390} {
		ctx := browser(t, width, 900, chromedp.Flag("force-prefers-reduced-motion", true))
		errs := consoleErrors(ctx)
		for _, s := range shots {
			evs := events(t, s.scenario, s.options)
			do(t, ctx, "open "+s.slug, chromedp.EmulateViewport(int64(width), 900), chromedp.Navigate(base+"/chapters/"+s.slug),
				chromedp.WaitVisible(chromedp.CSS(widget+` [data-action="play"]`)))
			waitLong(t, ctx, "the run ends", fmt.Sprintf(`document.querySelectorAll(".sacc-widget .sw-conn")[%d].dataset.state === "ended"`, s.widget))
			run(t, ctx, "open the view", chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
				document.querySelectorAll(".sacc-widget")[%d].querySelector('[data-view="%s"]').click(); return true; })()`, s.widget, s.view)))
			seekIn(t, ctx, s.widget, s.pos(evs))
			run(t, ctx, "scroll", chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
				const w = document.querySelectorAll(".sacc-widget")[%d]; w.scrollIntoView(); window.scrollBy(0, -8); return true; })()`, s.widget)))
			screenshot(t, ctx, fmt.Sprintf("%s-%d", s.name, width))
		}
		if e := errs(); len(e) > 0 {
			t.Fatalf("JavaScript errors in the console at %d px: %v", width, e)
		}
	}
}
