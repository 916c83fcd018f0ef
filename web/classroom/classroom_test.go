package classroom

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	saccbook "github.com/saccbook/saccbook"
	"github.com/saccbook/saccbook/chapters"
	"github.com/saccbook/saccbook/sacc/hunt"
	"github.com/saccbook/saccbook/static"
	"github.com/saccbook/saccbook/web"
	"github.com/saccbook/saccbook/workbook"
)

// class is a classroom on a loopback test server, over a course directory
// that outlives it (restart makes a new server on the same directory).
type class struct {
	t      *testing.T
	dir    string
	course *Course
	store  *Store
	srv    *Server
	ts     *httptest.Server
	addr   string
	now    time.Time
	mu     sync.Mutex
}

func newClass(t *testing.T) *class {
	c := &class{t: t, dir: t.TempDir(), now: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	c.start()
	t.Cleanup(c.stop)
	return c
}

func (c *class) clock() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *class) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *class) start() {
	t := c.t
	var err error
	if c.course, err = OpenCourse(c.dir, nil); err != nil {
		t.Fatal(err)
	}
	if c.store, err = OpenStore(c.dir); err != nil {
		t.Fatal(err)
	}
	c.srv, err = New(Config{Course: c.course, Store: c.store, Now: c.clock, Exercises: []string{"01-find-device", "02-ring"},
		Book: web.Config{Chapters: chapters.FS, Static: static.FS, Source: saccbook.Source}})
	if err != nil {
		t.Fatal(err)
	}
	// A restart listens where the class was: the students' enrolments
	// name that address.
	c.ts = httptest.NewUnstartedServer(c.srv.Handler())
	if c.addr != "" {
		ln, err := net.Listen("tcp", c.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.ts.Listener.Close()
		c.ts.Listener = ln
	}
	c.ts.Start()
	c.addr = c.ts.Listener.Addr().String()
}

func (c *class) stop() {
	if c.ts == nil {
		return
	}
	c.ts.Close()
	c.srv.Close()
	c.store.Close()
	c.ts = nil
}

// get asks for path with the given headers and returns the status and body.
func (c *class) do(method, path, token string, body []byte, hdr ...string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.ts.URL+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp.StatusCode, "" // a websocket: let through
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// join joins a student through the API and returns the enrolment.
func (c *class) join(name string) *Enrolment {
	c.t.Helper()
	e, _, err := Join(context.Background(), nil, c.srv.JoinURL(c.ts.URL), name)
	if err != nil {
		c.t.Fatal(err)
	}
	return e
}

// TestEveryRouteRefused: without the instructor's token or a student's
// session, every page, asset, API and websocket is 401; a student at the
// instructor's door is 403; each identity reaches what is theirs.
func TestEveryRouteRefused(t *testing.T) {
	c := newClass(t)
	student := c.join("ada").Token
	teacher := c.course.Instructor
	ws := []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
	base, _ := web.AssetBase(static.FS)
	type route struct {
		method, path   string
		instructorOnly bool
		upgrade        bool
	}
	studentOnly := map[string]bool{"/api/class/report": true, "/api/class/share": true} // the instructor has no work to report
	routes := []route{
		{"GET", "/", false, false},
		{"GET", "/chapters/00-the-whole-path", false, false},
		{"GET", base + "saccbook.js", false, false},
		{"GET", base + "saccbook.css", false, false},
		{"GET", "/api/v1/manifest", false, false},
		{"GET", "/source/sacc/driver/queue.go", false, false},
		{"GET", "/hunts", false, false},
		{"GET", "/healthz", false, false},
		{"GET", "/no/such/page", false, false},
		{"GET", "/follow", false, false},
		{"GET", "/share", false, false},
		{"GET", "/class-assets/classroom.js", false, false},
		{"GET", "/api/class/me", false, false},
		{"POST", "/api/class/report", false, false},
		{"POST", "/api/class/share", false, false},
		{"GET", "/ws/session", false, true},
		{"GET", "/ws/shared/lecture", false, true},
		{"GET", "/ws/class/follow", false, true},
		{"GET", "/class/", true, false},
		{"GET", "/class/dashboard.json", true, false},
		{"GET", "/class/export.csv", true, false},
		{"GET", "/class/broadcast", true, false},
		{"GET", "/class/runs/abc", true, false},
		{"GET", "/ws/class/lead", true, true},
	}
	for _, r := range routes {
		var hdr []string
		if r.upgrade {
			hdr = ws
		}
		if code, body := c.do(r.method, r.path, "", nil, hdr...); code != http.StatusUnauthorized {
			t.Errorf("%s %s with nobody: %d, want 401 (%.80s)", r.method, r.path, code, body)
		}
		if code, _ := c.do(r.method, r.path, "not-a-token", nil, hdr...); code != http.StatusUnauthorized {
			t.Errorf("%s %s with a wrong token: %d, want 401", r.method, r.path, code)
		}
		code, _ := c.do(r.method, r.path, student, nil, hdr...)
		switch {
		case r.instructorOnly && code != http.StatusForbidden:
			t.Errorf("%s %s as a student: %d, want 403", r.method, r.path, code)
		case !r.instructorOnly && (code == http.StatusUnauthorized || code == http.StatusForbidden):
			t.Errorf("%s %s as a student: %d, want it served", r.method, r.path, code)
		}
		if code, _ := c.do(r.method, r.path, teacher, nil, hdr...); code == http.StatusUnauthorized || (code == http.StatusForbidden) != studentOnly[r.path] {
			t.Errorf("%s %s as the instructor: %d, want it served", r.method, r.path, code)
		}
	}
	// Joining needs the join code, and nothing else answers to a wrong one.
	if code, _ := c.do("GET", "/join/"+strings.Repeat("0", 64), "", nil); code != http.StatusUnauthorized {
		t.Errorf("join page with a wrong code: %d, want 401", code)
	}
	if code, _ := c.do("GET", "/join/"+c.course.JoinCode, "", nil); code != http.StatusOK {
		t.Errorf("join page with the code: %d, want 200", code)
	}
	if code, _ := c.do("POST", "/api/class/join", "", []byte(`{"code":"nope","name":"eve"}`)); code != http.StatusUnauthorized {
		t.Errorf("API join with a wrong code: %d, want 401", code)
	}
	// A foreign Host is refused before anything (DNS rebinding).
	if code, _ := c.do("GET", "/", teacher, nil, "Host", "evil.example"); code != http.StatusForbidden {
		t.Errorf("a foreign Host: %d, want 403", code)
	}
	// The instructor URL's token becomes a cookie, and leaves the address.
	req, _ := http.NewRequest("GET", c.srv.InstructorURL(c.ts.URL), nil)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/class/" || len(resp.Cookies()) != 1 || resp.Cookies()[0].Value != teacher {
		t.Errorf("instructor URL: %d to %q with cookies %v", resp.StatusCode, resp.Header.Get("Location"), resp.Cookies())
	}
	if code, _ := c.do("GET", "/class/?token=wrong", "", nil); code != http.StatusUnauthorized {
		t.Errorf("instructor URL with a wrong token: %d, want 401", code)
	}
}

// TestJoinInTheBrowser: the join form sets a session cookie that opens the
// book; a name in use is refused.
func TestJoinInTheBrowser(t *testing.T) {
	c := newClass(t)
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar}
	resp, err := cl.PostForm(c.srv.JoinURL(c.ts.URL), url.Values{"name": {"grace"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/follow" || !strings.Contains(string(body), "grace") {
		t.Fatalf("join: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	for _, path := range []string{"/", "/api/v1/manifest", "/follow"} {
		resp, err := cl.Get(c.ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s with the session cookie: %d", path, resp.StatusCode)
		}
	}
	resp, err = http.PostForm(c.srv.JoinURL(c.ts.URL), url.Values{"name": {"grace"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "taken") {
		t.Errorf("a second grace: %d %.200s", resp.StatusCode, body)
	}
	if _, _, err := Join(context.Background(), nil, c.srv.JoinURL(c.ts.URL), "grace"); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("a second grace through the API: %v", err)
	}
}

func exerciseReport(item, status string, ran, failed int, test, kind string, at time.Time) Report {
	return Report{ID: NewReportID(), Kind: "exercise", Item: item, Status: status, Tests: Tally{Ran: ran, Failed: failed},
		FailingTest: test, EventKind: kind, At: at}
}

func (c *class) dashboardNow() *Dashboard {
	c.t.Helper()
	code, body := c.do("GET", "/class/dashboard.json", c.course.Instructor, nil)
	if code != http.StatusOK {
		c.t.Fatalf("dashboard: %d %s", code, body)
	}
	var d Dashboard
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		c.t.Fatal(err)
	}
	return &d
}

func cell(d *Dashboard, kind, student, item string) Cell {
	for _, sec := range d.Sections {
		if sec.Kind != kind {
			continue
		}
		for i, st := range d.Students {
			for j, it := range sec.Items {
				if st.Name == student && it == item {
					return sec.Rows[i][j]
				}
			}
		}
	}
	return Cell{}
}

// TestReportsOnlineOfflineAndRestart: reports reach the dashboard; those made
// while the server is down wait in the outbox and arrive once it is back;
// a restart loses nothing (roster, sessions, reports, the course's URLs).
func TestReportsOnlineOfflineAndRestart(t *testing.T) {
	c := newClass(t)
	e := c.join("ada")
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "exercises"), 0o755); err != nil {
		t.Fatal(err)
	}
	at := c.clock()
	if err := Queue(root, exerciseReport("01-find-device", "failing", 7, 3, "TestScan", "pci_cfg_read", at)); err != nil {
		t.Fatal(err)
	}
	if n, _, err := Send(context.Background(), nil, root, e); err != nil || n != 1 {
		t.Fatalf("send: %d, %v", n, err)
	}
	if got := cell(c.dashboardNow(), "exercise", "ada", "01-find-device"); got.Status != "failing" || got.Failed != 3 || got.Test != "TestScan" {
		t.Fatalf("after one report: %+v", got)
	}
	joinURL, instructorURL := c.srv.JoinURL(c.ts.URL), c.srv.InstructorURL("")

	// The server goes away: the report waits.
	c.stop()
	if err := Queue(root, exerciseReport("01-find-device", "done", 7, 0, "", "", at.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, _, err := Send(ctx, nil, root, e); err == nil {
		t.Fatal("send to a stopped server: no error")
	}
	if n := Waiting(root); n != 1 {
		t.Fatalf("after the outage: %d reports wait, want 1", n)
	}

	// Back, on the same course: the same session, the same URLs, the old
	// report, and the one that waited.
	c.start()
	if n, _, err := Send(context.Background(), nil, root, e); err != nil || n != 1 {
		t.Fatalf("send after the restart: %d, %v", n, err)
	}
	if n := Waiting(root); n != 0 {
		t.Errorf("%d reports still wait", n)
	}
	if got := cell(c.dashboardNow(), "exercise", "ada", "01-find-device"); got.Status != "done" {
		t.Errorf("after the outage: %+v, want done", got)
	}
	if code, _ := c.do("GET", "/api/class/me", e.Token, nil); code != http.StatusOK {
		t.Errorf("the session after a restart: %d", code)
	}
	if u := strings.TrimPrefix(c.srv.JoinURL(c.ts.URL), c.ts.URL); u != strings.TrimPrefix(joinURL, joinURL[:strings.Index(joinURL, "/join/")]) {
		t.Errorf("join URL changed across the restart: %s", u)
	}
	if c.srv.InstructorURL("") != instructorURL {
		t.Errorf("instructor URL changed across the restart")
	}
	reps, err := c.store.Reports(context.Background())
	if err != nil || len(reps) != 2 {
		t.Errorf("after the restart the store has %d reports (%v), want 2", len(reps), err)
	}
	// A report sent twice (the answer lost on the way) is recorded once.
	dup := exerciseReport("02-ring", "started", 0, 0, "", "", at)
	for range 2 {
		if err := Queue(root, dup); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Send(context.Background(), nil, root, e); err != nil {
			t.Fatal(err)
		}
	}
	if reps, _ := c.store.Reports(context.Background()); len(reps) != 3 {
		t.Errorf("a report sent twice: %d reports, want 3", len(reps))
	}
}

// TestDashboardAndCSV: the table, where failing runs fail, who is stuck
// longest, and the export.
func TestDashboardAndCSV(t *testing.T) {
	c := newClass(t)
	ada, bob, cy := c.join("ada"), c.join("bob"), c.join("=cy")
	t0 := c.clock()
	post := func(e *Enrolment, rs ...Report) {
		t.Helper()
		body, _ := json.Marshal(rs)
		if code, msg := c.do("POST", "/api/class/report", e.Token, body); code != http.StatusOK {
			t.Fatalf("report: %d %s", code, msg)
		}
	}
	post(ada, exerciseReport("01-find-device", "failing", 5, 2, "TestScan", "pci_cfg_read", t0),
		exerciseReport("01-find-device", "done", 5, 0, "", "", t0.Add(10*time.Minute)),
		exerciseReport("02-ring", "failing", 4, 1, "TestWrap", "sacc_phase_flip", t0.Add(20*time.Minute)))
	post(bob, exerciseReport("01-find-device", "failing", 5, 2, "TestScan", "pci_cfg_read", t0.Add(5*time.Minute)),
		exerciseReport("01-find-device", "failing", 5, 1, "TestScan", "pci_cfg_read", t0.Add(15*time.Minute)))
	post(cy, Report{ID: NewReportID(), Kind: "adversary", Item: "missing-wmb", Status: "tried", At: t0.Add(time.Minute)})
	c.advance(30 * time.Minute)

	d := c.dashboardNow()
	if got := cell(d, "exercise", "ada", "01-find-device"); got.Status != "done" {
		t.Errorf("ada 01: %+v", got)
	}
	if got := cell(d, "exercise", "bob", "01-find-device"); got.Status != "failing" || got.Failed != 1 || !got.Since.Equal(t0.Add(5*time.Minute)) {
		t.Errorf("bob 01: %+v", got)
	}
	if got := cell(d, "adversary", "=cy", "missing-wmb"); got.Status != "tried" {
		t.Errorf("a kind the dashboard takes as it is: %+v", got)
	}
	want := []Failure{{"01-find-device", "TestScan", 1}, {"02-ring", "TestWrap", 1}}
	if fmt.Sprint(d.Failures) != fmt.Sprint(want) {
		t.Errorf("failures: %v, want %v", d.Failures, want)
	}
	if len(d.Events) != 2 {
		t.Errorf("event kinds: %v", d.Events)
	}
	// Stuck longest: cy since 9:01 (a level), bob since 9:05, ada since 9:20.
	var stuck []string
	for _, s := range d.Stuck {
		stuck = append(stuck, fmt.Sprintf("%s %s %d", s.Student, s.Item, s.Minutes()))
	}
	if got := strings.Join(stuck, "; "); got != "=cy missing-wmb 29; bob 01-find-device 25; ada 02-ring 10" {
		t.Errorf("stuck: %s", got)
	}
	// The page shows the same.
	code, page := c.do("GET", "/class/", c.course.Instructor, nil)
	if code != http.StatusOK || !strings.Contains(page, `data-student="bob"`) || !strings.Contains(page, "TestWrap") || !strings.Contains(page, "Adversary levels") {
		t.Errorf("dashboard page: %d", code)
	}

	code, body := c.do("GET", "/class/export.csv", c.course.Instructor, nil)
	if code != http.StatusOK {
		t.Fatalf("csv: %d", code)
	}
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != strings.Join(CSVHeader, ",") || len(rows) != 5 {
		t.Fatalf("csv: %d rows: %v", len(rows), rows)
	}
	found := false
	for _, r := range rows[1:] {
		if r[0] == "bob" && r[3] == "01-find-device" {
			found = r[4] == "failing" && r[6] == "1" && r[10] == "TestScan" && r[11] == "pci_cfg_read"
		}
		if strings.HasPrefix(r[0], "=") {
			t.Errorf("a name that a spreadsheet would run as a formula: %q", r[0])
		}
	}
	if !found {
		t.Errorf("csv has no right row for bob's 01: %v", rows)
	}
	// A malformed report is refused whole.
	bad, _ := json.Marshal([]Report{{ID: "x", Kind: "exercise", Item: "01", Status: "nearly", At: t0}})
	if code, _ := c.do("POST", "/api/class/report", ada.Token, bad); code != http.StatusBadRequest {
		t.Errorf("a report with an unknown status: %d", code)
	}
}

// TestHuntGradedByTheServer: the server grades each answer with the course key
// and the student's learner id, and the dashboard scores the hunt.
func TestHuntGradedByTheServer(t *testing.T) {
	c := newClass(t)
	e := c.join("ada")
	h, err := hunt.Lookup(1)
	if err != nil {
		t.Fatal(err)
	}
	v := h.For(c.course.Key.Key, e.Learner)
	ans, err := v.Answer()
	if err != nil {
		t.Fatal(err)
	}
	answer := func(bug string, seq uint64) ReportAnswer {
		t.Helper()
		body, _ := json.Marshal([]Report{{ID: NewReportID(), Kind: "hunt", Item: "1", Status: "started",
			Answer: &Answer{Bug: bug, Event: fmt.Sprint(seq)}, At: c.clock()}})
		code, msg := c.do("POST", "/api/class/report", e.Token, body)
		if code != http.StatusOK {
			t.Fatalf("answer: %d %s", code, msg)
		}
		var a ReportAnswer
		if err := json.Unmarshal([]byte(msg), &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	if a := answer(ans.Bug.String(), ans.Seq+1); len(a.Verdict) != 1 || a.Verdict[0].Solved {
		t.Fatalf("a wrong event: %+v", a)
	}
	if a := answer(ans.Bug.String(), ans.Seq); len(a.Verdict) != 1 || !a.Verdict[0].Solved {
		t.Fatalf("the right answer: %+v", a)
	}
	got := cell(c.dashboardNow(), "hunt", "ada", "1")
	if got.Status != "solved" || !got.Graded || got.Score != workbook.HuntScore(1) || got.Wrong != 1 {
		t.Errorf("hunt 1 on the dashboard: %+v", got)
	}
	// Another learner id has another variant: the same answer need not fit,
	// and the key is the course's, so the server and the student agree.
	if c.course.Key.Learner != "" || !c.course.Key.Course {
		t.Errorf("the course key names a learner: %+v", c.course.Key)
	}
}

// TestSharedRunsAreTheInstructorsOnly: a student's shared run opens in the
// instructor's widget; no student reaches it, not even through a websocket.
func TestSharedRunsAreTheInstructorsOnly(t *testing.T) {
	c := newClass(t)
	ada, bob := c.join("ada"), c.join("bob")
	rec := workbook.RunRecord{Exercise: "01-find-device", Tests: []workbook.RecordedTest{{Name: "TestScan", Failed: true}},
		Test: "TestScan", Failed: true, Message: "no device", FailSeq: 2,
		Events: []json.RawMessage{json.RawMessage(`{"seq":1,"t":0,"kind":"pci_cfg_read","side":"bus","args":{},"text":""}`),
			json.RawMessage(`{"seq":2,"t":5,"kind":"pci_cfg_read","side":"bus","args":{},"text":""}`)}}
	data, _ := json.Marshal(rec)
	id, err := ShareRun(context.Background(), nil, ada, "01-find-device", data)
	if err != nil {
		t.Fatal(err)
	}
	if code, page := c.do("GET", "/class/runs/"+id, c.course.Instructor, nil); code != http.StatusOK || !strings.Contains(page, `data-recorded="`+id+`"`) {
		t.Errorf("the instructor's page of the run: %d", code)
	}
	if code, _ := c.do("GET", "/class/runs/"+id, bob.Token, nil); code != http.StatusForbidden {
		t.Errorf("another student's shared run: %d, want 403", code)
	}
	if code, _ := c.do("GET", "/class/runs/"+id, ada.Token, nil); code != http.StatusForbidden {
		t.Errorf("the student's own shared run on the instructor's page: %d, want 403", code)
	}
	hello := func(token string) map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(c.ts.URL, "http")+"/ws/session",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		msg := fmt.Sprintf(`{"type":"hello","v":1,"run":"recorded","exercise":%q}`, id)
		if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	}
	if m := hello(c.course.Instructor); m["type"] != "welcome" || m["fail_seq"] != 2.0 {
		t.Errorf("the instructor's widget: %v", m)
	}
	if m := hello(bob.Token); m["type"] != "error" {
		t.Errorf("a student's widget asking for a shared run: %v", m)
	}
	// A record that is not one is refused.
	if _, err := ShareRun(context.Background(), nil, ada, "02-ring", data); err == nil {
		t.Error("a record of 01 shared as 02: no error")
	}
}

// TestBroadcast: followers get the latest state on arrival and every change
// after; a student cannot lead.
func TestBroadcast(t *testing.T) {
	c := newClass(t)
	ada := c.join("ada")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dial := func(path, token string) *websocket.Conn {
		t.Helper()
		ws, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(c.ts.URL, "http")+path,
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
		if err != nil {
			code := 0
			if resp != nil {
				code = resp.StatusCode
			}
			t.Fatalf("%s: %v (%d)", path, err, code)
		}
		t.Cleanup(func() { ws.CloseNow() })
		return ws
	}
	lead := dial("/ws/class/lead", c.course.Instructor)
	send := func(seq uint64) {
		t.Helper()
		b, _ := json.Marshal(State{Scenario: "rings", Seed: 3, Seq: seq})
		if err := lead.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	recv := func(ws *websocket.Conn) State {
		t.Helper()
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, st, err := ParseCast(b)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	f1 := dial("/ws/class/follow", ada.Token)
	send(10)
	if st := recv(f1); st.Seq != 10 || st.Scenario != "rings" || st.Seed != 3 {
		t.Errorf("follower 1: %+v", st)
	}
	f2 := dial("/ws/class/follow", ada.Token) // a second tab arrives: the latest at once
	if st := recv(f2); st.Seq != 10 {
		t.Errorf("follower 2 on arrival: %+v", st)
	}
	send(11)
	for i, f := range []*websocket.Conn{f1, f2} {
		if st := recv(f); st.Seq != 11 {
			t.Errorf("follower %d: %+v", i+1, st)
		}
	}
	// A state for no scenario is refused, and nobody hears of it.
	_ = lead.Write(ctx, websocket.MessageText, []byte(`{"scenario":"nosuch","seq":1}`))
	_, b, err := lead.Read(ctx)
	if err != nil || !strings.Contains(string(b), "bad-request") {
		t.Errorf("a state for no scenario: %s %v", b, err)
	}
}

// TestJoinPageHasItsStyles: the join page is what a student sees before any
// session, so the style sheets it links come under its join code; every
// stylesheet and script a page links can be fetched by whoever sees the page,
// and the 401 page links none.
func TestJoinPageHasItsStyles(t *testing.T) {
	c := newClass(t)
	code, page := c.do("GET", "/join/"+c.course.JoinCode, "", nil)
	if code != http.StatusOK {
		t.Fatalf("join page: %d", code)
	}
	links := regexp.MustCompile(`(?:href|src)="(/[^"]+\.(?:css|js))"`).FindAllStringSubmatch(page, -1)
	if len(links) != 2 {
		t.Fatalf("join page links %d style sheets, want 2: %v", len(links), links)
	}
	for _, l := range links {
		if code, body := c.do("GET", l[1], "", nil); code != http.StatusOK || !strings.Contains(body, "{") {
			t.Errorf("GET %s with nobody, from the join page: %d %.80q", l[1], code, body)
		}
	}
	for path, want := range map[string]int{
		"/join/not-the-code/style/saccbook.css":                http.StatusUnauthorized,
		"/join/" + c.course.JoinCode + "/style/saccbook.js":    http.StatusNotFound,
		"/join/" + c.course.JoinCode + "/style/classroom.js":   http.StatusNotFound,
		"/join/" + c.course.JoinCode + "/style/..%2Fjoin.html": http.StatusNotFound,
	} {
		if code, _ := c.do("GET", path, "", nil); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}
	code, denied := c.do("GET", "/follow", "", nil, "Accept", "text/html")
	if code != http.StatusUnauthorized || strings.Contains(denied, "stylesheet") || strings.Contains(denied, "<script") {
		t.Errorf("401 page: %d, links what it would be refused: %.300s", code, denied)
	}
}
