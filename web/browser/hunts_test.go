package browser_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	saccbook "github.com/saccbook/saccbook"
	"github.com/saccbook/saccbook/chapters"
	"github.com/saccbook/saccbook/sacc/hunt"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/static"
	"github.com/saccbook/saccbook/web"
	"github.com/saccbook/saccbook/web/live"
)

var browserKey = bytes.Repeat([]byte{0x3e}, 32)

// memHunts grades with the real grader and keeps the records in memory, with
// the scoring of saccbook hunt.
type memHunts struct {
	mu    sync.Mutex
	wrong map[int]int
	score map[int]int
}

func (m *memHunts) List() ([]web.HuntRow, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var rows []web.HuntRow
	for _, h := range hunt.Catalogue() {
		r := web.HuntRow{Hunt: h, Status: "not started", Wrong: m.wrong[h.Number], Worth: max(2, 10-2*m.wrong[h.Number]), Max: 10}
		if m.wrong[h.Number] > 0 {
			r.Status = "started"
		}
		if s, ok := m.score[h.Number]; ok {
			r.Status, r.Score, r.Worth = "solved", s, s
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func (m *memHunts) Learner() string { return "ann" }

func (m *memHunts) Submit(n int, bug, event string) (web.HuntVerdict, error) {
	h, err := hunt.Lookup(n)
	if err == nil {
		var s hunt.Submission
		if s, err = hunt.ParseSubmission(bug, event); err == nil {
			var vd hunt.Verdict
			if vd, err = h.For(browserKey, "ann").Grade(s); err == nil {
				m.mu.Lock()
				defer m.mu.Unlock()
				if vd.Solved() {
					m.score[n] = max(2, 10-2*m.wrong[n])
				} else {
					m.wrong[n]++
				}
				return web.HuntVerdict{Lines: []string{vd.Message(s)}, Solved: vd.Solved()}, nil
			}
		}
	}
	var in *hunt.InputError
	if errors.As(err, &in) {
		return web.HuntVerdict{Problem: in.Msg}, nil
	}
	return web.HuntVerdict{}, err
}

func huntServer(t *testing.T) string {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	hs := &memHunts{wrong: map[int]int{}, score: map[int]int{}}
	hub := live.New(live.Options{AllowedOrigins: web.OriginPatterns(web.DefaultAllowedHosts()), Logger: quiet,
		Hunts: func(n int) (hunt.Variant, error) {
			h, err := hunt.Lookup(n)
			if err != nil {
				return hunt.Variant{}, err
			}
			return h.For(browserKey, "ann"), nil
		}})
	h, err := web.NewHandler(web.Config{Chapters: chapters.FS, Static: static.FS, Live: hub, Source: saccbook.Source,
		AllowedHosts: web.DefaultAllowedHosts(), Logger: quiet, Hunts: hs})
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

// TestHuntInTheBrowser: the hunts list, then one hunt's page, whose widget runs
// the learner's variant — every event of it, nothing to switch, no bug named
// even once played to its end — and whose form takes a wrong answer, then the
// right one, and says so each time.
func TestHuntInTheBrowser(t *testing.T) {
	base := huntServer(t)
	const n = 7
	h, _ := hunt.Find(n)
	v := h.For(browserKey, "ann")
	a, err := v.Answer()
	if err != nil {
		t.Fatal(err)
	}
	want, err := v.Run(true)
	if err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{1280, 390} {
		ctx := browser(t, width, 900, chromedp.Flag("force-prefers-reduced-motion", true))
		errs := consoleErrors(ctx)
		do(t, ctx, "open the hunts", chromedp.EmulateViewport(int64(width), 900), chromedp.Navigate(base+"/hunts"),
			chromedp.WaitVisible(chromedp.CSS(`a[href="/hunts/7"]`)))
		if rows := run(t, ctx, "count the hunts", chromedp.Evaluate[int](`document.querySelectorAll("table.hunt-list tbody tr").length`)); rows != len(hunt.Catalogue()) {
			t.Errorf("%d rows, want %d", rows, len(hunt.Catalogue()))
		}
		screenshot(t, ctx, fmt.Sprintf("hunts-%d", width))

		do(t, ctx, "open hunt 7", chromedp.Click(chromedp.CSS(`a[href="/hunts/7"]`)),
			chromedp.WaitVisible(chromedp.CSS(widget+` [data-action="play"]`)))
		ended(t, ctx, widget)
		if total := num(t, ctx, widget, "data-total"); total != len(want.Events) {
			t.Errorf("the widget has %d events, the variant %d", total, len(want.Events))
		}
		for _, sel := range []string{"select[data-option]", "input[data-quirk]", "input.sw-seed", "[data-show]"} {
			// Present and visible: the comparison's buttons are in every widget, hidden.
			if n := run(t, ctx, "count "+sel, chromedp.Evaluate[int](fmt.Sprintf(`[...document.querySelectorAll(%q)].filter((e) => e.offsetParent !== null).length`, widget+" "+sel))); n != 0 {
				t.Errorf("a hunt's widget offers %s (%d)", sel, n)
			}
		}
		screenshot(t, ctx, fmt.Sprintf("hunt-top-%d", width))
		setSelect(t, ctx, widget+" select.sw-speed", "max")
		do(t, ctx, "play to the end", chromedp.Click(chromedp.CSS(widget+` [data-action="play"]`)))
		waitFor(t, ctx, "the end", fmt.Sprintf(`document.querySelector(%q).dataset.seq === document.querySelector(%q).dataset.total`, widget, widget))
		waitFor(t, ctx, "the outcome", fmt.Sprintf(`!document.querySelector(%q).hidden`, widget+" [data-outcome]"))
		text := run(t, ctx, "the widget's text", chromedp.Evaluate[string](`document.querySelector(".sacc-widget").textContent`))
		for _, q := range quirk.All() {
			if strings.Contains(text, q.Name) {
				t.Errorf("the hunt's widget names %s", q.Name)
			}
		}
		run(t, ctx, "show the outcome", chromedp.Evaluate[bool](`(() => { document.querySelector(".sacc-widget [data-outcome]").scrollIntoView(); return true; })()`))
		screenshot(t, ctx, fmt.Sprintf("hunt-widget-%d", width))

		if width == 1280 {
			wrong := quirk.MissingWMB.String()
			setSelect(t, ctx, "#hunt-bug", wrong)
			do(t, ctx, "a wrong answer", chromedp.SetValue(chromedp.CSS("#hunt-event"), strconv.FormatUint(a.Seq, 10)),
				chromedp.Click(chromedp.CSS(".hunt-form button[type=submit]")))
			do(t, ctx, "the verdict", chromedp.WaitVisible(chromedp.CSS(".hunt-verdict")))
			got := run(t, ctx, "the verdict", chromedp.Evaluate[string](`document.querySelector(".hunt-verdict").dataset.verdict + ": " + document.querySelector(".hunt-verdict").textContent + " | " + document.querySelector(".hunt-record").textContent`))
			if !strings.HasPrefix(got, "wrong: ") || !strings.Contains(got, "it is not "+wrong) || !strings.Contains(got, "worth 8 of 10") {
				t.Errorf("after a wrong answer: %q", got)
			}
			screenshot(t, ctx, "hunt-wrong-1280")
			setSelect(t, ctx, "#hunt-bug", a.Bug.String())
			do(t, ctx, "the answer", chromedp.SetValue(chromedp.CSS("#hunt-event"), strconv.FormatUint(a.Seq, 10)),
				chromedp.Click(chromedp.CSS(".hunt-form button[type=submit]")),
				chromedp.WaitVisible(chromedp.CSS(`.hunt-verdict[data-verdict="solved"]`)))
			if got := run(t, ctx, "the record", chromedp.Evaluate[string](`document.querySelector(".hunt-record").textContent`)); !strings.Contains(got, "solved, 8 of 10") {
				t.Errorf("after the answer: %q", got)
			}
			screenshot(t, ctx, "hunt-solved-1280")
			do(t, ctx, "back to the list", chromedp.Navigate(base+"/hunts"), chromedp.WaitVisible(chromedp.CSS(`tr[data-hunt="7"][data-status="solved"]`)))
		}
		noErrors(t, errs)
	}
}
