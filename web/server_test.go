package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/saccbook/saccbook/chapters"
	"github.com/saccbook/saccbook/static"
	"github.com/saccbook/saccbook/web/manifest"
)

func TestRoutes(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, tc := range []struct {
		name    string
		path    string
		status  int
		ctype   string
		want    []string
		notWant []string
	}{
		{name: "contents", path: "/", status: 200, ctype: "text/html; charset=utf-8", want: []string{
			"<title>Contents · saccbook</title>",
			`<a href="/chapters/00-start-here"><span class="chapter-number">00</span> <span class="chapter-title">Start here</span></a>`,
			`<a href="/chapters/2-the-middle"><span class="chapter-number">02</span> <span class="chapter-title">The middle</span></a>`,
			`<a href="/chapters/10-the-end"><span class="chapter-number">10</span> <span class="chapter-title">The end</span></a>`,
		}, notWant: []string{"toc-sidebar"}},
		{name: "first chapter", path: "/chapters/00-start-here", status: 200, ctype: "text/html; charset=utf-8", want: []string{
			"<title>Start here · saccbook</title>",
			`<p class="chapter-number">Chapter 00</p>`,
			"<h1>Start here</h1>",
			`<nav class="toc-sidebar" aria-label="Chapters">`,
			`<a href="/chapters/00-start-here" aria-current="page">`,
			`<a href="/chapters/10-the-end">`,
			`<a class="next" rel="next" href="/chapters/2-the-middle">02 The middle →</a>`,
			`<div class="sacc-widget" data-scenario="driver" data-options="cpu=arm64,irq=on" data-views="ring,garage" data-seq="0" data-widget="1" data-start="" data-markers="[]" data-folds="enumeration,fill,readback">`,
			`<span class="hl-k">func</span>`,
			"<table>", "<del>struck</del>", `class="footnote-ref"`,
		}, notWant: []string{`rel="prev"`, "<script>alert", `alert("raw")`}},
		{name: "middle chapter", path: "/chapters/2-the-middle", status: 200, ctype: "text/html; charset=utf-8", want: []string{
			`<a class="prev" rel="prev" href="/chapters/00-start-here">← 00 Start here</a>`,
			`<a class="next" rel="next" href="/chapters/10-the-end">10 The end →</a>`,
			`<a href="/chapters/2-the-middle" aria-current="page">`,
			`data-scenario="job" data-options="" data-views="" data-seq="12"`,
		}},
		{name: "last chapter", path: "/chapters/10-the-end", status: 200, ctype: "text/html; charset=utf-8",
			want: []string{`rel="prev" href="/chapters/2-the-middle"`}, notWant: []string{`rel="next"`}},
		{name: "unknown chapter", path: "/chapters/99-nothing", status: 404, ctype: "text/html; charset=utf-8",
			want: []string{"<h1>Not found</h1>", `href="/chapters/00-start-here"`}},
		{name: "chapter with .md", path: "/chapters/00-start-here.md", status: 404, ctype: "text/html; charset=utf-8"},
		{name: "unknown page", path: "/nothing/here", status: 404, ctype: "text/html; charset=utf-8", want: []string{"Not found"}},
		{name: "stylesheet", path: ts.asset("saccbook.css"), status: 200, ctype: "text/css; charset=utf-8", want: []string{"margin: 0"}},
		{name: "script", path: ts.asset("saccbook.js"), status: 200, ctype: "javascript", want: []string{"use strict"}},
		{name: "nested asset", path: ts.asset("img/logo.svg"), status: 200, ctype: "image/svg+xml"},
		{name: "code.css", path: ts.asset("code.css"), status: 200, ctype: "text/css; charset=utf-8", want: []string{".hl-k {", ".hl-s {"}},
		{name: "no directory listing", path: ts.asset(""), status: 404, ctype: "text/plain"},
		{name: "no directory listing below", path: ts.asset("img/"), status: 404, ctype: "text/plain"},
		{name: "missing asset", path: ts.asset("nosuch.js"), status: 404, ctype: "text/plain"},
		{name: "no way up", path: ts.asset("../chapters/00-start-here"), status: 404},
		{name: "no version", path: "/static/saccbook.css", status: 404, ctype: "text/plain"},
		{name: "another version", path: "/static/0123456789ab/saccbook.css", status: 404, ctype: "text/plain"},
		{name: "the version alone", path: "/static/" + ts.version, status: 404, ctype: "text/plain"},
		{name: "health", path: "/healthz", status: 200, ctype: "text/plain; charset=utf-8", want: []string{"ok"}},
		{name: "session socket", path: "/ws/session", status: 200, want: []string{"live session"}},
		{name: "shared socket", path: "/ws/shared/class-a", status: 200, want: []string{"live shared:class-a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := ts.get(tc.path)
			body := w.Body.String()
			if w.Code != tc.status {
				t.Fatalf("GET %s: status %d, want %d; body %.300s", tc.path, w.Code, tc.status, body)
			}
			if ct := w.Header().Get("Content-Type"); !strings.Contains(ct, tc.ctype) {
				t.Errorf("Content-Type %q, want %q", ct, tc.ctype)
			}
			for _, s := range tc.want {
				if !strings.Contains(body, s) {
					t.Errorf("body lacks %q:\n%s", s, body)
				}
			}
			for _, s := range tc.notWant {
				if strings.Contains(body, s) {
					t.Errorf("body has %q:\n%s", s, body)
				}
			}
		})
	}
}

func TestContentsListsChaptersInOrder(t *testing.T) {
	body := newTestServer(t, nil).get("/").Body.String()
	got := regexp.MustCompile(`href="/chapters/([^"]+)"`).FindAllStringSubmatch(body, -1)
	var slugs []string
	for _, m := range got {
		slugs = append(slugs, m[1])
	}
	if want := "00-start-here 2-the-middle 10-the-end"; strings.Join(slugs, " ") != want {
		t.Errorf("contents lists %v, want %s", slugs, want)
	}
}

func TestPagesLinkTheirAssets(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, path := range []string{"/", "/chapters/00-start-here", "/chapters/none"} {
		body := ts.get(path).Body.String()
		for _, re := range []string{
			`<link rel="stylesheet" href="/static/` + ts.version + `/saccbook.css">`,
			`<link rel="stylesheet" href="/static/` + ts.version + `/code.css">`,
			`<script type="module" src="/static/` + ts.version + `/saccbook.js"></script>`,
		} {
			if !regexp.MustCompile(re).MatchString(body) {
				t.Errorf("%s: no match for %s", path, re)
			}
		}
		// Nothing from elsewhere: no CDN, no external URL, nothing inline.
		for _, bad := range []string{"http://", "https://", "//cdn", "<style", " style=", "<script>", "onload="} {
			if strings.Contains(body, bad) {
				t.Errorf("%s contains %q", path, bad)
			}
		}
	}
}

func TestStaticCaching(t *testing.T) {
	ts := newTestServer(t, nil)
	w := ts.get(ts.asset("saccbook.css"))
	if cc := w.Header().Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
		t.Errorf("Cache-Control %q, want a long max-age, immutable", cc)
	}
	etag := w.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	w = ts.do(http.MethodGet, ts.asset("saccbook.css"), map[string]string{"If-None-Match": etag})
	if w.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: status %d, want 304", w.Code)
	}
	if cc := ts.get("/").Header().Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("page Cache-Control %q, want no-cache", cc)
	}
}

// TestManifestRoute: the manifest is JSON, revalidated with its ETag.
func TestManifestRoute(t *testing.T) {
	ts := newTestServer(t, nil)
	w := ts.get(manifest.Path)
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" || !json.Valid(w.Body.Bytes()) {
		t.Fatalf("GET %s: %d %q %.100s", manifest.Path, w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	if w.Body.String() != string(manifest.JSON()) || w.Header().Get("Cache-Control") != "no-cache" {
		t.Errorf("body or Cache-Control %q", w.Header().Get("Cache-Control"))
	}
	etag := w.Header().Get("ETag")
	if etag != manifest.ETag() {
		t.Errorf("ETag %q, want %q", etag, manifest.ETag())
	}
	if w := ts.do(http.MethodGet, manifest.Path, map[string]string{"If-None-Match": etag}); w.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: status %d, want 304", w.Code)
	}
	if w := ts.get("/api/v2/manifest"); w.Code != 404 {
		t.Errorf("another version: %d, want 404", w.Code)
	}
}

func TestHeadAndMethods(t *testing.T) {
	ts := newTestServer(t, nil)
	if w := ts.do(http.MethodHead, "/chapters/00-start-here", nil); w.Code != 200 {
		t.Errorf("HEAD chapter: %d", w.Code)
	}
	if w := ts.do(http.MethodHead, ts.asset("saccbook.css"), nil); w.Code != 200 {
		t.Errorf("HEAD asset: %d", w.Code)
	}
	if w := ts.do(http.MethodPost, "/", nil); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", w.Code)
	}
}

func TestNewHandlerRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		err  string
	}{
		{"no chapters", func(c *Config) { c.Chapters = nil }, "Chapters is nil"},
		{"no static", func(c *Config) { c.Static = nil }, "Static is nil"},
		{"no live", func(c *Config) { c.Live = nil }, "Live is nil"},
		{"no script", func(c *Config) { c.Static = fstest.MapFS{"saccbook.css": {}} }, "saccbook.js is missing"},
		{"own code.css", func(c *Config) {
			c.Static = fstest.MapFS{"saccbook.css": {}, "saccbook.js": {}, "code.css": {}}
		}, "code.css is generated"},
		{"bad host", func(c *Config) { c.AllowedHosts = []string{"http://x/"} }, `allowed host "http://x/"`},
		{"bare IPv6 host", func(c *Config) { c.AllowedHosts = []string{"::1"} }, `allowed host "::1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Chapters: testBook(), Static: testStatic(), Live: &fakeLive{}}
			tc.edit(&cfg)
			if _, err := NewHandler(cfg); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
}

// TestTheBookIsServed serves the real book with the real assets: every chapter
// page is there and links only to this server.
func TestTheBookIsServed(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Chapters, c.Static = chapters.FS, static.FS })
	toc := ts.get("/")
	if toc.Code != 200 || !strings.Contains(toc.Body.String(), "The journey of one job") {
		t.Fatalf("contents: %d %s", toc.Code, toc.Body)
	}
	links := regexp.MustCompile(`href="(/chapters/[^"]+)"`).FindAllStringSubmatch(toc.Body.String(), -1)
	if len(links) == 0 {
		t.Fatal("the contents page links no chapter")
	}
	for _, l := range links {
		w := ts.get(l[1])
		if w.Code != 200 {
			t.Errorf("%s: %d", l[1], w.Code)
		}
		if body := w.Body.String(); strings.Contains(body, "://") || !strings.Contains(body, `class="sacc-widget"`) {
			t.Errorf("%s: an external URL, or no widget", l[1])
		}
	}
	for _, asset := range requiredAssets {
		if w := ts.get(ts.asset(asset)); w.Code != 200 {
			t.Errorf("%s: %d", asset, w.Code)
		}
	}
}

func TestSourceRoute(t *testing.T) {
	src := fstest.MapFS{"sacc/driver/queue.go": {Data: []byte("package driver\n")}, "sacc/driver/queue_test.go": {Data: []byte("x")}}
	h, err := NewHandler(Config{Chapters: testBook(), Static: testStatic(), Live: &fakeLive{}, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{
		"/source/sacc/driver/queue.go":      200,
		"/source/sacc/driver/queue_test.go": 404,
		"/source/sacc/driver/missing.go":    404,
		"/source/../go.mod":                 404,
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "http://127.0.0.1"+path, nil)
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("%s: %d, want %d", path, rec.Code, want)
		}
	}
}
