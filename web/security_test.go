package web

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func TestHostAllowlist(t *testing.T) {
	for _, tc := range []struct {
		allowed []string
		host    string
		ok      bool
	}{
		{nil, "127.0.0.1:8080", true},
		{nil, "127.0.0.1", true},
		{nil, "localhost:1", true},
		{nil, "LocalHost.:8080", true},
		{nil, "[::1]:8080", true},
		{nil, "[::1]", true},
		{nil, "evil.example", false},
		{nil, "evil.example:8080", false},
		{nil, "127.0.0.1.evil.example:8080", false},
		{nil, "localhost.evil.example", false},
		{nil, "127.0.0.2:8080", false},
		{nil, "", false},
		{nil, "[::1", false},
		{[]string{"book.lan:8080", "10.0.0.5"}, "book.lan:8080", true},
		{[]string{"book.lan:8080", "10.0.0.5"}, "book.lan:9090", false},
		{[]string{"book.lan:8080", "10.0.0.5"}, "book.lan", false},
		{[]string{"book.lan:8080", "10.0.0.5"}, "10.0.0.5:80", true},
		{[]string{"book.lan:8080", "10.0.0.5"}, "localhost:8080", false}, // a list replaces the defaults
		{[]string{"[fd00::2]"}, "[fd00::2]:8080", true},
	} {
		ts := newTestServer(t, func(c *Config) { c.AllowedHosts = tc.allowed })
		w := ts.do(http.MethodGet, "/healthz", map[string]string{"Host": tc.host})
		if got := w.Code == http.StatusOK; got != tc.ok {
			t.Errorf("allowed %v, Host %q: status %d, want allowed=%v", tc.allowed, tc.host, w.Code, tc.ok)
		}
		if !tc.ok && (w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "does not answer to host")) {
			t.Errorf("Host %q: %d %q, want 403 with a short text", tc.host, w.Code, w.Body)
		}
	}
}

func TestForeignHostReachesNothing(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, p := range []string{"/", "/chapters/00-start-here", ts.asset("saccbook.js"), "/ws/session", "/ws/shared/x", "/nothing"} {
		if w := ts.do(http.MethodGet, p, map[string]string{"Host": "rebound.example:8080"}); w.Code != http.StatusForbidden {
			t.Errorf("%s with a foreign Host: %d", p, w.Code)
		}
	}
	if calls := ts.live.Calls(); len(calls) != 0 {
		t.Errorf("live handler was called: %v", calls)
	}
	if !strings.Contains(ts.log.String(), "refused request for a foreign Host") {
		t.Errorf("refusal not logged: %s", ts.log)
	}
}

func TestWebsocketOrigin(t *testing.T) {
	for _, tc := range []struct {
		name, host, origin string
		ok                 bool
	}{
		{"no Origin (a program)", "127.0.0.1:8080", "", true},
		{"same origin", "127.0.0.1:8080", "http://127.0.0.1:8080", true},
		{"same origin, case", "localhost:8080", "http://LOCALHOST:8080", true},
		{"same origin, IPv6", "[::1]:8080", "http://[::1]:8080", true},
		{"same origin, default port", "localhost", "http://localhost", true},
		{"foreign site", "127.0.0.1:8080", "http://evil.example", false},
		{"foreign site, same port", "127.0.0.1:8080", "http://evil.example:8080", false},
		{"other port", "127.0.0.1:8080", "http://127.0.0.1:9090", false},
		{"other loopback name", "127.0.0.1:8080", "http://localhost:8080", false},
		{"null (sandboxed frame, file://)", "127.0.0.1:8080", "null", false},
		{"file scheme", "127.0.0.1:8080", "file://", false},
		{"garbage", "127.0.0.1:8080", "::not a url", false},
		{"with user", "127.0.0.1:8080", "http://u@127.0.0.1:8080", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, nil)
			for _, p := range []string{"/ws/session", "/ws/shared/class"} {
				h := map[string]string{"Host": tc.host}
				if tc.origin != "" {
					h["Origin"] = tc.origin
				}
				w := ts.do(http.MethodGet, p, h)
				if tc.ok && (w.Code != 200 || !strings.HasPrefix(w.Body.String(), "live ")) {
					t.Errorf("%s: %d %q, want it passed to the live handler", p, w.Code, w.Body)
				}
				if !tc.ok && w.Code != http.StatusForbidden {
					t.Errorf("%s: %d, want 403", p, w.Code)
				}
			}
			if want := map[bool]int{true: 2, false: 0}[tc.ok]; len(ts.live.Calls()) != want {
				t.Errorf("live calls %v, want %d", ts.live.Calls(), want)
			}
		})
	}
	// Origin is the websocket's business: an ordinary page may be linked from anywhere.
	ts := newTestServer(t, nil)
	if w := ts.do(http.MethodGet, "/", map[string]string{"Origin": "http://elsewhere.example"}); w.Code != 200 {
		t.Errorf("page with a foreign Origin: %d", w.Code)
	}
}

// TestOriginPatterns checks the patterns for web/live the way coder/websocket
// uses them: path.Match on the lower-cased Origin host.
func TestOriginPatterns(t *testing.T) {
	match := func(pats []string, host string) bool {
		for _, p := range pats {
			if ok, err := path.Match(strings.ToLower(p), strings.ToLower(host)); err != nil {
				t.Fatalf("pattern %q: %v", p, err)
			} else if ok {
				return true
			}
		}
		return false
	}
	def := OriginPatterns(nil)
	for host, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost": true, "[::1]:8080": true, "[::1]": true,
		"evil.example": false, "localhost.evil.example:80": false, "127.0.0.1.nip.io": false, ":8080": false,
	} {
		if got := match(def, host); got != want {
			t.Errorf("default patterns %q, host %q: %v, want %v", def, host, got, want)
		}
	}
	custom := OriginPatterns([]string{"book.lan:8080"})
	if !match(custom, "book.lan:8080") || match(custom, "book.lan:8081") || match(custom, "localhost:8080") {
		t.Errorf("custom patterns %q", custom)
	}
}

func TestSecurityHeaders(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, tc := range []struct {
		path string
		host string
	}{
		{"/", ""}, {"/chapters/2-the-middle", ""}, {"/chapters/nope", ""}, {ts.asset("code.css"), ""},
		{"/healthz", ""}, {"/ws/session", ""}, {"/", "evil.example"},
	} {
		h := map[string]string{}
		if tc.host != "" {
			h["Host"] = tc.host
		}
		w := ts.do(http.MethodGet, tc.path, h)
		for name, want := range map[string]string{
			"Content-Security-Policy": "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'",
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
		} {
			if got := w.Header().Get(name); !strings.HasPrefix(got, want) {
				t.Errorf("%s (Host %q): %s = %q, want %q", tc.path, tc.host, name, got, want)
			}
		}
	}
}

func TestOrdinaryRoutesAreLimited(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		slow := ordinaryLimits(20 * time.Millisecond)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			_, _ = io.WriteString(w, "too late")
		}))
		w := httptest.NewRecorder()
		slow.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Code != http.StatusServiceUnavailable || strings.Contains(w.Body.String(), "too late") {
			t.Errorf("slow handler: %d %q, want 503", w.Code, w.Body)
		}
	})
	t.Run("trickling body", func(t *testing.T) {
		// A client that sends its headers and then a byte now and then must lose
		// the connection once the request's deadline passes.
		h := ordinaryLimits(100 * time.Millisecond)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
		}))
		srv := httptest.NewUnstartedServer(h)
		srv.Config = NewServer("", h)
		srv.Start()
		defer srv.Close()
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			_, _ = io.Copy(io.Discard, c) // returns when the server closes the connection
		}()
		for i := 0; i < 1000; i++ {
			select {
			case <-closed:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := c.Write([]byte{'x'}); err != nil {
				return // the server has gone
			}
		}
		t.Fatal("the server still reads a body that trickled in for 20 s")
	})
	t.Run("client not reading", func(t *testing.T) {
		// A client that asks for a large answer and reads none of it must lose
		// the connection once the write deadline passes, instead of holding it
		// (and the buffered answer) for as long as it likes.
		const size = 16 << 20 // more than the socket buffers hold
		// Time enough for the handler to buffer the answer even under the race
		// detector: a handler cut short would answer 503 in a few bytes, and the
		// connection would then wait idle for the client's next request.
		var answered atomic.Bool
		h := ordinaryLimits(time.Second)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write(make([]byte, size))
			answered.Store(r.Context().Err() == nil)
		}))
		srv := httptest.NewUnstartedServer(h)
		srv.Config = NewServer("", h)
		closed := make(chan struct{})
		srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed {
				close(closed)
			}
		}
		srv.Start()
		defer srv.Close()
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.(*net.TCPConn).SetReadBuffer(4096)
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-closed:
		case <-time.After(20 * time.Second):
			if !answered.Load() {
				t.Skip("the handler did not finish within the request's time; nothing was learnt")
			}
			t.Fatal("the server still waits, after 20 s, on a client that reads nothing")
		}
	})
	t.Run("body", func(t *testing.T) {
		var readErr error
		h := ordinaryLimits(time.Second)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, readErr = io.Copy(io.Discard, r.Body)
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(make([]byte, 100<<10))))
		if readErr == nil || !strings.Contains(readErr.Error(), "too large") {
			t.Errorf("reading a 100 KiB body: %v, want an error", readErr)
		}
		readErr = nil
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(make([]byte, 60<<10))))
		if readErr != nil {
			t.Errorf("reading a 60 KiB body: %v", readErr)
		}
	})
}

// TestWebsocketRoutesHaveNoTimeout serves over a real connection: the live
// handler outlives the request timeout, has no deadline, and can hijack.
func TestWebsocketRoutesHaveNoTimeout(t *testing.T) {
	const timeout = 30 * time.Millisecond
	ts := newTestServer(t, func(c *Config) { c.RequestTimeout = timeout })
	var deadline bool
	ts.live.serveFn = func(w http.ResponseWriter, r *http.Request) {
		_, deadline = r.Context().Deadline()
		time.Sleep(4 * timeout)
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, "cannot hijack: "+err.Error(), http.StatusInternalServerError)
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
		_ = rw.Flush()
	}
	srv := httptest.NewServer(ts.h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/ws/session")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hijacked" {
		t.Errorf("websocket route: %d %q, want the hijacked answer after the request timeout", resp.StatusCode, body)
	}
	if deadline {
		t.Error("the websocket handler's context has a deadline")
	}
	// The same timeout does apply to ordinary routes: they answer well within it.
	resp, err = srv.Client().Get(srv.URL + "/chapters/00-start-here")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("chapter: %d", resp.StatusCode)
	}
}

func TestPanicBecomes500(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.live.serveFn = func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/boom") {
			panic("the machine caught fire")
		}
		_, _ = io.WriteString(w, "fine")
	}
	w := ts.get("/ws/shared/boom")
	if w.Code != http.StatusInternalServerError {
		t.Errorf("panicking handler: %d, want 500", w.Code)
	}
	if log := ts.log.String(); !strings.Contains(log, "panic serving a request") || !strings.Contains(log, "the machine caught fire") {
		t.Errorf("panic not logged: %s", log)
	}
	if w := ts.get("/ws/shared/calm"); w.Code != 200 || w.Body.String() != "fine" {
		t.Errorf("after the panic: %d %q", w.Code, w.Body)
	}
	if w := ts.get("/"); w.Code != 200 {
		t.Errorf("after the panic, contents: %d", w.Code)
	}

	// A panic on an ordinary route is caught the same way, through the timeout
	// handler's goroutine.
	h := recoverPanics(ts.logger())(ordinaryLimits(time.Second)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("page panic")
	})))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(ts.log.String(), "page panic") {
		t.Errorf("ordinary panic: %d", rec.Code)
	}
}

// TestPanicAfterHijack: nothing is written to a hijacked connection; it is
// closed, and the server goes on.
func TestPanicAfterHijack(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.live.serveFn = func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		_ = conn // left open on purpose: the recovery must close it
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		_ = rw.Flush()
		panic("after the upgrade")
	}
	srv := httptest.NewServer(ts.h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/ws/session")
	if err == nil {
		rest, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusSwitchingProtocols || bytes.Contains(rest, []byte("500")) {
			t.Errorf("after hijack the client got %d %q", resp.StatusCode, rest)
		}
	}
	waitFor(t, "the panic to be logged", func() bool { return strings.Contains(ts.log.String(), "after the upgrade") })
	if !strings.Contains(ts.log.String(), "hijacked=true") {
		t.Errorf("log: %s", ts.log)
	}
	resp, err = srv.Client().Get(srv.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("server after the panic: %v", err)
	}
	resp.Body.Close()
}

// TestRealWebsocket dials through the whole middleware stack with
// coder/websocket, the library web/live uses, configured as web/live should be.
func TestRealWebsocket(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.live.serveFn = func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: OriginPatterns(nil)})
		if err != nil {
			return // Accept has answered
		}
		defer c.CloseNow()
		typ, msg, err := c.Read(r.Context())
		if err != nil {
			return
		}
		_ = c.Write(r.Context(), typ, append([]byte("echo "), msg...))
		_ = c.Close(websocket.StatusNormalClosure, "")
	}
	srv := httptest.NewServer(ts.h)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws/session"
	c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{
		HTTPClient: srv.Client(),
		HTTPHeader: http.Header{"Origin": {srv.URL}},
	})
	if err != nil {
		t.Fatalf("same-origin dial: %v", err)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"ping","id":1}`)); err != nil {
		t.Fatal(err)
	}
	_, msg, err := c.Read(ctx)
	if err != nil || string(msg) != `echo {"type":"ping","id":1}` {
		t.Errorf("echo: %q %v", msg, err)
	}
	c.CloseNow()

	_, resp, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{
		HTTPClient: srv.Client(),
		HTTPHeader: http.Header{"Origin": {"http://evil.example"}},
	})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin dial: err %v, response %v; want 403", err, resp)
	}
}
