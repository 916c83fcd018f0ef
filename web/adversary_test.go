package web

import (
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/adversary"
)

type fakeRecords map[string]string

func (f fakeRecords) AdversaryStatus() (map[string]string, error) { return f, nil }

func (f fakeRecords) RecordPlay(name string, won bool, choices int) error {
	if won {
		f[name] = fmt.Sprintf("won in %d", choices)
	} else if f[name] == "" {
		f[name] = "tried"
	}
	return nil
}

var recordToken = regexp.MustCompile(`name="token" value="([0-9a-f]+)"`)

// TestAdversaryRecord: a game played to its end in the browser is recorded as
// it really ended, by the server's own replay, and only with the guards a hunt's
// answer has.
func TestAdversaryRecord(t *testing.T) {
	rec := fakeRecords{}
	ts := newTestServer(t, func(c *Config) { c.Adversary = rec })
	l, _ := adversary.Lookup("missing-rmb")
	sched := adversary.FormatSchedule(l.Solve(adversary.DefaultBound).Schedule)
	w := ts.get("/adversary/missing-rmb?s=" + url.QueryEscape(sched))
	m := recordToken.FindStringSubmatch(w.Body.String())
	if w.Code != 200 || m == nil || !strings.Contains(w.Body.String(), `<form class="adv-record" method="post" action="/adversary/missing-rmb/record">`) ||
		w.Header().Get("Referrer-Policy") != "same-origin" {
		t.Fatalf("the won game's page: %d %v\n%.3000s", w.Code, w.Header(), w.Body.String())
	}
	token := m[1]
	form := func(tok, s string) url.Values { return url.Values{"token": {tok}, "schedule": {s}} }
	for _, c := range []struct {
		what    string
		path    string
		form    url.Values
		headers map[string]string
		code    int
	}{
		{"no token", "/adversary/missing-rmb/record", form("", sched), nil, 403},
		{"another launch's token", "/adversary/missing-rmb/record", form(strings.Repeat("0", 32), sched), nil, 403},
		{"from another computer", "/adversary/missing-rmb/record", form(token, sched), map[string]string{"Remote": "192.0.2.7:5000"}, 403},
		{"from another site", "/adversary/missing-rmb/record", form(token, sched), map[string]string{"Origin": "http://evil.example"}, 403},
		{"Origin: null", "/adversary/missing-rmb/record", form(token, sched), map[string]string{"Origin": "null"}, 403},
		{"a game not over", "/adversary/missing-rmb/record", form(token, "2,2"), nil, 400},
		{"a schedule that does not replay", "/adversary/missing-rmb/record", form(token, "9"), nil, 400},
		{"an unknown level", "/adversary/no-such/record", form(token, sched), nil, 404},
	} {
		if w := ts.post(c.path, c.form, c.headers); w.Code != c.code {
			t.Errorf("%s: %d, want %d: %.300s", c.what, w.Code, c.code, w.Body.String())
		}
	}
	if len(rec) != 0 {
		t.Fatalf("refused requests recorded %v", rec)
	}
	w = ts.post("/adversary/missing-rmb/record", form(token, sched), map[string]string{"Origin": "http://127.0.0.1:8080"})
	if w.Code != 200 || !strings.Contains(w.Body.String(), "Recorded in your progress: won in 7 choices.") || rec["missing-rmb"] != "won in 7" {
		t.Errorf("the record: %d %v\n%.2000s", w.Code, rec, w.Body.String())
	}
	f := form(token, heldSchedule(t, "rmb"))
	f.Set("reply", "json")
	w = ts.post("/adversary/rmb/record", f, nil)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"saved":"Recorded in your progress: a game the driver held."`) || rec["rmb"] != "tried" {
		t.Errorf("a held game, in JSON: %d %v %s", w.Code, rec, w.Body.String())
	}
	// Without a workspace there is no record, no form and no token.
	bare := newTestServer(t, nil)
	if body := bare.get("/adversary/missing-rmb?s=" + url.QueryEscape(sched)).Body.String(); strings.Contains(body, "adv-record") || strings.Contains(body, "data-token") {
		t.Errorf("a server without a workspace offers to record:\n%.2000s", body)
	}
	if w := bare.post("/adversary/missing-rmb/record", form(token, sched), nil); w.Code != 403 && w.Code != 409 {
		t.Errorf("a record on a server without a workspace: %d", w.Code)
	}
}

var choiceLink = regexp.MustCompile(`<a class="adv-choice" data-choice="([0-9]+)" data-kind="([a-z]+)" href="([^"]+)">`)

// TestAdversaryPagesPlayWithoutScript: following the page's own choice links
// along the solver's schedule reaches the win, a page at a time.
func TestAdversaryPagesPlayWithoutScript(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Adversary = fakeRecords{"missing-wmb": "won", "wmb": "proved"} })
	w := ts.get("/adversary")
	body := w.Body.String()
	if w.Code != 200 || !strings.Contains(body, "1 won, 1 proved, of 13 levels") ||
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
	// The page takes a level's number as saccbook adversary play does, and
	// sends the browser to its name; the API takes names only.
	w = ts.get("/adversary/1?s=1,1")
	if loc := w.Header().Get("Location"); w.Code != 302 || loc != "/adversary/missing-wmb?s=1%2C1" {
		t.Errorf("/adversary/1: %d, Location %q", w.Code, loc)
	}
	if w = ts.get("/adversary/99"); w.Code != 404 || !strings.Contains(w.Body.String(), "/adversary") {
		t.Errorf("/adversary/99: %d %s", w.Code, w.Body.String())
	}
	w = ts.get("/adversary/wmb")
	if body := w.Body.String(); !strings.Contains(body, "no schedule of ≤ 60 choices breaks it") || strings.Contains(body, "adv-solver-play") ||
		!strings.Contains(body, `<span class="adv-claim" data-breakable="false">This driver is correct`) {
		t.Errorf("wmb's solver:\n%.3000s", body)
	}
	w = ts.get("/adversary/missing-wmb")
	if body := w.Body.String(); !strings.Contains(body, "broken in 6 choices") || !strings.Contains(body, `<a class="adv-solver-play" href="/adversary/missing-wmb?s=1%2C1%2C1%2C1%2C4%2C4">`) {
		t.Errorf("missing-wmb's solver:\n%.3000s", body[max(strings.Index(body, "adv-solver"), 0):])
	}
	w = ts.get("/adversary/wmb?s=9,9")
	if w.Code != 400 || !strings.Contains(w.Body.String(), "does not replay") || !strings.Contains(w.Body.String(), `data-schedule=""`) {
		t.Errorf("a page with a schedule that does not replay: %d\n%.2000s", w.Code, w.Body.String())
	}
}

// heldSchedule plays level name to its end, always with the last choice open.
func heldSchedule(t *testing.T, name string) string {
	t.Helper()
	l, _ := adversary.Lookup(name)
	var sched []int
	for {
		s, _, err := l.Replay(sched)
		if err != nil {
			t.Fatal(err)
		}
		if over, _ := l.Over(&s); over {
			return adversary.FormatSchedule(sched)
		}
		sched = append(sched, len(l.Choices(&s)))
	}
}
