package web

import (
	"encoding/json"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/adversary"
)

type fakeRecords map[string]string

func (f fakeRecords) AdversaryStatus() (map[string]string, error) { return f, nil }

var choiceLink = regexp.MustCompile(`<a class="adv-choice" data-choice="([0-9]+)" data-kind="([a-z]+)" href="([^"]+)">`)

// TestAdversaryPagesPlayWithoutScript: following the page's own choice links
// along the solver's schedule reaches the win, a page at a time.
func TestAdversaryPagesPlayWithoutScript(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Adversary = fakeRecords{"missing-wmb": "won", "wmb": "proved"} })
	w := ts.get("/adversary")
	body := w.Body.String()
	if w.Code != 200 || !strings.Contains(body, "1 won, 1 proved, of 12 levels") ||
		!strings.Contains(body, `<tr data-level="missing-wmb" data-status="won">`) || !strings.Contains(body, `<a href="/adversary/rmb">`) {
		t.Errorf("/adversary: %d\n%.3000s", w.Code, body)
	}
	for _, l := range adversary.Levels() {
		if !l.Breakable {
			continue
		}
		r := l.Solve(adversary.DefaultBound)
		at := "/adversary/" + l.Name
		for i, k := range r.Schedule {
			w := ts.get(at)
			links := choiceLink.FindAllStringSubmatch(w.Body.String(), -1)
			if w.Code != 200 || k > len(links) {
				t.Fatalf("%s: %d, %d choice links, want choice %d (step %d)", at, w.Code, len(links), k, i+1)
			}
			at = html.UnescapeString(links[k-1][3])
		}
		w := ts.get(at)
		body := w.Body.String()
		if w.Code != 200 || !strings.Contains(body, `data-won="true"`) || !strings.Contains(body, "You broke it: ") || strings.Contains(body, `class="adv-choice"`) {
			t.Errorf("%s after the solver's schedule: %d\n%.3000s", at, w.Code, body)
		}
	}
}

func TestAdversaryAPI(t *testing.T) {
	ts := newTestServer(t, nil)
	l, _ := adversary.Lookup("drain-then-ack")
	r := l.Solve(adversary.DefaultBound)
	w := ts.get(AdversaryAPIPath + "drain-then-ack?s=" + adversary.FormatSchedule(r.Schedule))
	var g AdversaryGame
	if err := json.Unmarshal(w.Body.Bytes(), &g); err != nil || w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%d %v %s", w.Code, err, w.Body.String())
	}
	if !g.State.Won || !g.State.Over || g.State.Broken != r.Why || g.Level.Name != "drain-then-ack" || !g.Level.Breakable || g.Schedule != adversary.FormatSchedule(r.Schedule) {
		t.Errorf("after the solver's schedule: %+v", g)
	}
	w = ts.get(AdversaryAPIPath + "wmb")
	if err := json.Unmarshal(w.Body.Bytes(), &g); err != nil || w.Code != 200 || g.State.Over || len(g.State.Choices) != 1 || g.State.PC != 0 {
		t.Errorf("the start of wmb: %d %+v", w.Code, g)
	}
	for _, c := range []struct {
		path string
		code int
		want string
	}{
		{AdversaryAPIPath + "no-such", 404, `no adversary level \"no-such\"`},
		{AdversaryAPIPath + "1", 404, "addressed by name"},
		{AdversaryAPIPath + "wmb?s=1,x", 400, "malformed schedule: choice 2"},
		{AdversaryAPIPath + "wmb?s=5", 400, "the schedule does not replay: choice 1 of the schedule is 5"},
		{"/adversary/no-such", 404, "no adversary level"},
	} {
		w := ts.get(c.path)
		if w.Code != c.code || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("%s: %d %s, want %d and %q", c.path, w.Code, w.Body.String(), c.code, c.want)
		}
	}
	w = ts.get("/adversary/wmb?s=9,9")
	if w.Code != 400 || !strings.Contains(w.Body.String(), "does not replay") || !strings.Contains(w.Body.String(), `data-schedule=""`) {
		t.Errorf("a page with a schedule that does not replay: %d\n%.2000s", w.Code, w.Body.String())
	}
}
