package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/saccbook/saccbook/sacc/hunt"
)

// fakeHunts records submissions and answers them as told.
type fakeHunts struct {
	mu      sync.Mutex
	got     []string // "N bug event"
	solved  map[int]bool
	problem string
}

func (f *fakeHunts) List() ([]HuntRow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var rows []HuntRow
	for _, h := range hunt.Catalogue() {
		r := HuntRow{Hunt: h, Status: "not started", Worth: 10, Max: 10}
		if f.solved[h.Number] {
			r.Status, r.Score, r.Worth, r.Wrong = "solved", 8, 8, 1
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func (f *fakeHunts) Learner() string { return "ann" }

func (f *fakeHunts) Submit(n int, bug, event string) (HuntVerdict, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, strings.Join([]string{strconv.Itoa(n), bug, event}, " "))
	if f.problem != "" {
		return HuntVerdict{Problem: f.problem}, nil
	}
	if f.solved == nil {
		f.solved = map[int]bool{}
	}
	f.solved[n] = true
	return HuntVerdict{Lines: []string{"Right: the bug is " + bug + ".", "Hunt solved: 8 of 10 points."}, Solved: true}, nil
}

func (f *fakeHunts) submissions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

var tokenField = regexp.MustCompile(`name="token" value="([0-9a-f]+)"`)

// tokenOf reads the submission token from a hunt page.
func tokenOf(t *testing.T, ts *testServer, n string) string {
	t.Helper()
	w := ts.get("/hunts/" + n)
	m := tokenField.FindStringSubmatch(w.Body.String())
	if w.Code != 200 || m == nil {
		t.Fatalf("/hunts/%s: %d, no token in\n%.2000s", n, w.Code, w.Body.String())
	}
	return m[1]
}

// post sends a form, from this computer unless remote says otherwise.
func (ts *testServer) post(target string, form url.Values, headers map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Host = "127.0.0.1:8080"
	r.RemoteAddr = "127.0.0.1:40000"
	for k, v := range headers {
		switch k {
		case "Host":
			r.Host = v
		case "Remote":
			r.RemoteAddr = v
		default:
			r.Header.Set(k, v)
		}
	}
	w := httptest.NewRecorder()
	ts.h.ServeHTTP(w, r)
	return w
}

func TestHuntPages(t *testing.T) {
	f := &fakeHunts{}
	ts := newTestServer(t, func(c *Config) { c.Hunts = f })
	w := ts.get("/hunts")
	body := w.Body.String()
	if w.Code != 200 || !strings.Contains(body, fmt.Sprintf("Learner <strong>ann</strong>: 0 of %d solved", len(hunt.Catalogue()))) ||
		!strings.Contains(body, `<a href="/hunts/3">Copies are reported done before their data is there</a>`) ||
		!strings.Contains(body, "<code>missing-wmb</code>") || w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("/hunts: %d %s\n%.3000s", w.Code, w.Header(), body)
	}
	for _, n := range []string{"99", "0", "abc", "03"} {
		if w := ts.get("/hunts/" + n); w.Code != 404 || !strings.Contains(w.Body.String(), "listed at /hunts") {
			t.Errorf("/hunts/%s: %d %s", n, w.Code, w.Body.String())
		}
	}
	w = ts.get("/hunts/3")
	body = w.Body.String()
	h, _ := hunt.Find(3)
	for _, want := range []string{
		"<h1>" + h.Title + "</h1>",
		`<div class="sacc-widget" data-hunt="3" data-scenario="hunt-jobs" data-options="" data-views="trace,ring,registers" data-seq="0" data-widget="1" data-start="" data-markers="[]">`,
		`<form class="hunt-form" method="post" action="/hunts/3/submit#answer">`,
		`<option value="no-cq-head">`, "worth 10 of 10 points now",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/hunts/3 lacks %q:\n%.4000s", want, body)
		}
	}
	// The page's form must send its real Origin: the site's no-referrer policy
	// would make the browser send "null".
	if rp := w.Header().Get("Referrer-Policy"); rp != "same-origin" {
		t.Errorf("/hunts/3: Referrer-Policy %q, want same-origin", rp)
	}
	past := fmt.Sprintf("/hunts/%d", len(hunt.Catalogue())+1) // the first number with no hunt
	for _, path := range []string{"/hunts/0", past, "/hunts/x", "/hunts/03", "/hunts/3/submit"} {
		if w := ts.get(path); w.Code != 404 && w.Code != 405 {
			t.Errorf("GET %s: %d", path, w.Code)
		}
	}
}

// TestHuntSubmission: the form's POST, from this computer, with this launch's
// token and the page's own Origin (or none), is graded and shown; a problem in
// the input is a 400 with its message.
func TestHuntSubmission(t *testing.T) {
	f := &fakeHunts{}
	ts := newTestServer(t, func(c *Config) { c.Hunts = f })
	token := tokenOf(t, ts, "3")
	for _, origin := range []string{"http://127.0.0.1:8080", ""} {
		w := ts.post("/hunts/3/submit", url.Values{"token": {token}, "bug": {"no-cq-head"}, "event": {"150"}}, map[string]string{"Origin": origin})
		body := w.Body.String()
		if w.Code != 200 || !strings.Contains(body, `data-verdict="solved"`) || !strings.Contains(body, "Right: the bug is no-cq-head.") ||
			!strings.Contains(body, `<option value="no-cq-head" selected>`) || !strings.Contains(body, "solved, 8 of 10 points") {
			t.Errorf("origin %q: %d\n%.3000s", origin, w.Code, body)
		}
	}
	if got := f.submissions(); len(got) != 2 || got[0] != "3 no-cq-head 150" {
		t.Errorf("submissions %q", got)
	}
	f.problem = `event "abc": want an event's sequence number, such as 150`
	w := ts.post("/hunts/3/submit", url.Values{"token": {token}, "bug": {"no-cq-head"}, "event": {"abc"}}, nil)
	if w.Code != 400 || !strings.Contains(w.Body.String(), `data-verdict="problem"`) || !strings.Contains(w.Body.String(), "want an event&#39;s sequence number") {
		t.Errorf("a problem: %d\n%.3000s", w.Code, w.Body.String())
	}
}

// TestHuntSubmissionIsGuarded: a POST without the token, with another launch's
// token, from another Origin, from another computer, for another Host, or to
// any other path is refused, and reaches no submission.
func TestHuntSubmissionIsGuarded(t *testing.T) {
	f := &fakeHunts{}
	ts := newTestServer(t, func(c *Config) { c.Hunts = f })
	token := tokenOf(t, ts, "3")
	other := tokenOf(t, newTestServer(t, func(c *Config) { c.Hunts = f }), "3")
	if other == token {
		t.Fatal("two launches have the same token")
	}
	form := func(tok string) url.Values {
		return url.Values{"token": {tok}, "bug": {"no-cq-head"}, "event": {"150"}}
	}
	for _, tc := range []struct {
		name    string
		target  string
		form    url.Values
		headers map[string]string
		status  int
	}{
		{"no token", "/hunts/3/submit", url.Values{"bug": {"no-cq-head"}, "event": {"150"}}, nil, 403},
		{"another launch's token", "/hunts/3/submit", form(other), nil, 403},
		{"another origin", "/hunts/3/submit", form(token), map[string]string{"Origin": "http://evil.example"}, 403},
		{"another port", "/hunts/3/submit", form(token), map[string]string{"Origin": "http://127.0.0.1:9999"}, 403},
		{"null origin", "/hunts/3/submit", form(token), map[string]string{"Origin": "null"}, 403},
		{"another computer", "/hunts/3/submit", form(token), map[string]string{"Remote": "192.0.2.7:5000"}, 403},
		{"another host", "/hunts/3/submit", form(token), map[string]string{"Host": "evil.example"}, 403},
		{"the hunt page", "/hunts/3", form(token), nil, 405},
		{"the list", "/hunts", form(token), nil, 405},
		{"a chapter", "/chapters/00-start-here", form(token), nil, 405},
		{"the manifest", "/api/v1/manifest", form(token), nil, 405},
		{"nowhere", "/progress", form(token), nil, 404},
		{"no such hunt", "/hunts/99/submit", form(token), nil, 404},
	} {
		w := ts.post(tc.target, tc.form, tc.headers)
		if w.Code != tc.status {
			t.Errorf("%s: %d, want %d: %s", tc.name, w.Code, tc.status, w.Body.String())
		}
	}
	if got := f.submissions(); len(got) != 0 {
		t.Errorf("refused requests reached the grader: %q", got)
	}
}

// TestHuntPagesWithoutWorkspace: without hunts the pages say why, and take no
// answer.
func TestHuntPagesWithoutWorkspace(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, path := range []string{"/hunts", "/hunts/5"} {
		w := ts.get(path)
		if w.Code != 200 || !strings.Contains(w.Body.String(), "found no workspace") || strings.Contains(w.Body.String(), "<form") {
			t.Errorf("%s: %d\n%.2000s", path, w.Code, w.Body.String())
		}
	}
	m := tokenField.FindStringSubmatch(ts.get("/hunts/5").Body.String())
	if m != nil {
		t.Errorf("a token on a page without hunts")
	}
	w := ts.post("/hunts/5/submit", url.Values{"bug": {"x"}, "event": {"1"}}, nil)
	if w.Code != 403 {
		t.Errorf("a submission without hunts: %d", w.Code)
	}
}
