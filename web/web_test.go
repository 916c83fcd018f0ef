package web

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"go.uber.org/goleak"

	"github.com/saccbook/saccbook/internal/syncbuf"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testBook is a small book that uses every feature the renderer supports. The
// chapter numbers sort differently as numbers and as strings (2 < 10).
func testBook() fstest.MapFS {
	return fstest.MapFS{
		"00-start-here.md": {Data: []byte(`# Start *here*

Some text with ~~struck~~ words and a footnote.[^note]

[^note]: The footnote's text.

| register | offset |
| --- | --- |
| SQ_TAIL | 0x1000 |

` + "```go" + `
func main() { fmt.Println("hi") }
` + "```" + `

<script>alert("raw")</script>

<div class="raw">raw block</div>

An inline <span>tag</span> too.

` + "```sacc-run scenario=driver options=cpu=arm64,irq=on views=ring,garage" + `
` + "```" + `

[bad link](javascript:alert(1))
`)},
		"2-the-middle.md": {Data: []byte("# The middle\n\n## A section\n\nMiddle text.\n\n```sacc-run scenario=job seq=12\n```\n")},
		"10-the-end.md":   {Data: []byte("# The end\n\nLast words.\n")},
	}
}

// testStatic is a minimal asset tree.
func testStatic() fstest.MapFS {
	return fstest.MapFS{
		"saccbook.css":  {Data: []byte("body { margin: 0 }\n")},
		"saccbook.js":   {Data: []byte("\"use strict\";\n")},
		"img/logo.svg":  {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"></svg>`)},
		"fonts/x.woff2": {Data: []byte("wOF2")},
	}
}

// fakeLive records what reaches the websocket routes and can misbehave.
type fakeLive struct {
	mu      sync.Mutex
	calls   []string // "session" or "shared:NAME"
	serveFn func(w http.ResponseWriter, r *http.Request)
}

func (f *fakeLive) record(call string, w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	fn := f.serveFn
	f.mu.Unlock()
	if fn != nil {
		fn(w, r)
		return
	}
	_, _ = io.WriteString(w, "live "+call)
}

func (f *fakeLive) ServeSession(w http.ResponseWriter, r *http.Request) { f.record("session", w, r) }

func (f *fakeLive) ServeShared(w http.ResponseWriter, r *http.Request, name string) {
	f.record("shared:"+name, w, r)
}

func (f *fakeLive) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

type testServer struct {
	h       http.Handler
	live    *fakeLive
	log     *syncbuf.Buffer
	version string // of the static assets
}

func newTestServer(t *testing.T, edit func(*Config)) *testServer {
	t.Helper()
	ts := &testServer{live: &fakeLive{}, log: &syncbuf.Buffer{}}
	cfg := Config{
		Chapters: testBook(),
		Static:   testStatic(),
		Live:     ts.live,
		Logger:   slog.New(slog.NewTextHandler(ts.log, nil)),
	}
	if edit != nil {
		edit(&cfg)
	}
	h, err := NewHandler(cfg)
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	ts.h = h
	assets, err := loadAssets(cfg.Static)
	if err != nil {
		t.Fatal(err)
	}
	ts.version = assets.version
	return ts
}

// asset is where the server offers a static file: under its asset version.
func (ts *testServer) asset(name string) string { return "/static/" + ts.version + "/" + name }

// get serves one request with Host 127.0.0.1:8080 unless headers say otherwise.
func (ts *testServer) do(method, target string, headers map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	r.Host = "127.0.0.1:8080"
	for k, v := range headers {
		if k == "Host" {
			r.Host = v
			continue
		}
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	ts.h.ServeHTTP(w, r)
	return w
}

func (ts *testServer) get(target string) *httptest.ResponseRecorder {
	return ts.do(http.MethodGet, target, nil)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// logger writes to the same log as the server under test.
func (ts *testServer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(ts.log, nil)) }
