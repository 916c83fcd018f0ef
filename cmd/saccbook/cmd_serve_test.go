package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func TestServeHelp(t *testing.T) {
	code, out, errOut := runCLI(t, "", "serve", "--help")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	for _, want := range []string{"Usage: saccbook serve [--addr 127.0.0.1:8080] [--open]", "-addr", "-open", "127.0.0.1"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
	code, _, errOut = runCLI(t, "", "serve", "chapter-1")
	if code != 2 || !strings.Contains(errOut, `unexpected argument "chapter-1"`) {
		t.Errorf("serve with an argument: code %d, %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "serve", "--addr", "127.0.0.1:99999")
	if code != 1 || !strings.Contains(errOut, "listen") {
		t.Errorf("bad address: code %d, %q", code, errOut)
	}
}

// TestServeStartsAndStops serves the real book on a free loopback port, reads
// a page and stops through the context.
func TestServeStartsAndStops(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}, ln,
			serveOptions{started: func(url string) { urls <- url }})
	}()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("serve returned early: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not start")
	}
	if want := "http://" + ln.Addr().String() + "/"; url != want {
		t.Errorf("URL %q, want %q", url, want)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	for path, want := range map[string]struct {
		status int
		body   string
	}{
		"":                                   {200, "The journey of one job"},
		"chapters/00-the-journey-of-one-job": {200, `class="sacc-widget" data-scenario="job"`},
		"api/v1/manifest":                    {200, `"scenarios"`},
		"healthz":                            {200, "ok"},
	} {
		resp, err := client.Get(url + path)
		if err != nil {
			t.Fatalf("GET /%s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want.status || !strings.Contains(string(body), want.body) {
			t.Errorf("GET /%s: %d, want %d and %q", path, resp.StatusCode, want.status, want.body)
		}
	}
	// The page's script, at the versioned address the page names.
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	script := regexp.MustCompile(`<script type="module" src="/(static/[0-9a-f]+/saccbook\.js)">`).FindSubmatch(page)
	if script == nil {
		t.Fatalf("the contents page names no script:\n%s", page)
	}
	if resp, err := client.Get(url + string(script[1])); err != nil || resp.StatusCode != 200 {
		t.Errorf("GET /%s: %v %v", script[1], resp, err)
	} else {
		resp.Body.Close()
	}
	// A live widget's session, as the browser opens it.
	wsCtx, wsCancel := context.WithTimeout(ctx, 10*time.Second)
	defer wsCancel()
	ws, _, err := websocket.Dial(wsCtx, "ws"+strings.TrimPrefix(url, "http")+"ws/session", &websocket.DialOptions{
		HTTPClient: client,
		HTTPHeader: http.Header{"Origin": {strings.TrimSuffix(url, "/")}},
	})
	if err != nil {
		t.Fatalf("websocket: %v", err)
	}
	if err := ws.Write(wsCtx, websocket.MessageText, []byte(`{"type":"hello","v":1,"scenario":"job"}`)); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for len(kinds) == 0 || kinds[len(kinds)-1] != "end" {
		_, msg, err := ws.Read(wsCtx)
		if err != nil {
			t.Fatalf("websocket read after %v: %v", kinds, err)
		}
		var m struct{ Type string }
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, m.Type)
	}
	if kinds[0] != "welcome" || !slices.Contains(kinds, "events") {
		t.Errorf("session messages %v", kinds)
	}
	// Left open on purpose: stopping the server must close it.

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop after the context ended")
	}
	if !strings.Contains(stdout.String(), "serving the book at "+url) || !strings.Contains(stdout.String(), "stopped") {
		t.Errorf("stdout: %q", stdout.String())
	}
	if strings.Contains(stderr.String(), "WARNING") {
		t.Errorf("a loopback server warned: %s", stderr.String())
	}
	if _, err := client.Get(url + "healthz"); err == nil {
		t.Error("the server still answers after stopping")
	}
	if _, _, err := ws.Read(wsCtx); err == nil {
		t.Error("the live session is still open after stopping")
	}
	ws.CloseNow()
}

// TestServeCommandStops runs the command through dispatch with a context that
// has already ended: it binds, prints its URL and shuts down cleanly.
func TestServeCommandStops(t *testing.T) {
	// Outside a workspace: serve then makes no hunt key and writes no address
	// file in this repository's exercises.
	t.Chdir(t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := dispatch(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, strings.NewReader(""), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "serving the book at http://127.0.0.1:") || !strings.Contains(out.String(), "stopped") {
		t.Errorf("code %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

func TestHostsFor(t *testing.T) {
	for _, tc := range []struct {
		ip      string
		url     string
		exposed bool
		host    string // one host that must be allowed
	}{
		{"127.0.0.1", "http://127.0.0.1:8080/", false, "localhost"},
		{"::1", "http://[::1]:8080/", false, "[::1]"},
		{"0.0.0.0", "http://127.0.0.1:8080/", true, "127.0.0.1"},
		{"::", "http://127.0.0.1:8080/", true, "localhost"},
		{"192.0.2.7", "http://192.0.2.7:8080/", true, "192.0.2.7"},
		{"2001:db8::7", "http://[2001:db8::7]:8080/", true, "[2001:db8::7]"},
	} {
		hosts, url, exposed := hostsFor(&net.TCPAddr{IP: net.ParseIP(tc.ip), Port: 8080})
		if url != tc.url || exposed != tc.exposed || !slices.Contains(hosts, tc.host) {
			t.Errorf("%s: hosts %v, url %q, exposed %v; want %q, %v and %q allowed", tc.ip, hosts, url, exposed, tc.url, tc.exposed, tc.host)
		}
	}
}

func TestExposedWarning(t *testing.T) {
	var b bytes.Buffer
	warnExposed(&b, &net.TCPAddr{IP: net.ParseIP("0.0.0.0"), Port: 8080}, []string{"127.0.0.1", "192.0.2.7"})
	out := b.String()
	if strings.Count(out, "\n") < 5 || !strings.Contains(out, "WARNING") || !strings.Contains(out, "192.0.2.7") || !strings.Contains(out, "--addr 127.0.0.1:8080") {
		t.Errorf("warning:\n%s", out)
	}
}
