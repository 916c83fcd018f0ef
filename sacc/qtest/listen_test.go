package qtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saccbook/saccbook/internal/syncbuf"
)

// running is a Server serving a listener in the background, with what it logged
// and every machine it made.
type running struct {
	t       *testing.T
	network string
	addr    string
	log     syncbuf.Buffer
	cancel  context.CancelFunc
	done    chan error

	mu    sync.Mutex
	fakes []*fakeMachine
}

// start serves spec with srv (its NewMachine and Log are set here) until the test
// ends.
func start(t *testing.T, spec string, srv Server) *running {
	t.Helper()
	ln, err := Listen(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &running{t: t, network: ln.Addr().Network(), addr: ln.Addr().String(), done: make(chan error, 1)}
	srv.NewMachine = func() (Machine, error) {
		f := newFake()
		r.mu.Lock()
		r.fakes = append(r.fakes, f)
		r.mu.Unlock()
		return f, nil
	}
	srv.Log = &r.log
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- srv.Serve(ctx, ln) }()
	t.Cleanup(r.stop)
	return r
}

// stop ends the server and waits for it; after it, the machines may be looked at.
func (r *running) stop() {
	r.t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			r.t.Errorf("Serve = %v, want nil after cancel", err)
		}
	case <-time.After(timeout):
		r.t.Fatal("Serve did not return after cancel")
	}
}

func (r *running) dial() *client { return dial(r.t, r.network, r.addr) }

// send writes text on the connection as it is.
func (c *client) send(text string) {
	c.t.Helper()
	if _, err := c.conn.Write([]byte(text)); err != nil {
		c.t.Fatal(err)
	}
}

// TestHTTPRequestLine checks the pattern on request lines of every form a browser
// or an HTTP client sends, and on every form of qtest request, none of which may
// match.
func TestHTTPRequestLine(t *testing.T) {
	for _, line := range []string{
		"GET / HTTP/1.1", "POST /qtest HTTP/1.1\r", "PUT /x?y=1 HTTP/1.0", "OPTIONS * HTTP/1.1",
		"CONNECT 127.0.0.1:3000 HTTP/1.1", "PRI * HTTP/2.0", "get /a HTTP/1.1", "BREW /pot HTTP/1.1",
		"GET http://127.0.0.1:3000/ HTTP/1.1", "GET /0.9 HTTP/2",
	} {
		if !httpRequestLine.MatchString(line) {
			t.Errorf("%q is not taken for an HTTP request line", line)
		}
	}
	for _, line := range []string{
		"readl 0xb0018000", "read 0x1000 16", "write 0x1000 2 0xabcd", "b64write 0x1000 3 AQID",
		"memset 0x1000 16 0x5a", "clock_step", "clock_step 100", "trace on", "help read", "endianness",
		"outb 0x80 1", "", "GET / HTTP/1.1 extra", "GET /  HTTP/1.1", "GET / HTTP/x.1", "GET / HTTPS/1.1",
	} {
		if httpRequestLine.MatchString(line) {
			t.Errorf("%q is taken for an HTTP request line", line)
		}
	}
}

// TestServerDropsHTTP sends what a web page's text/plain POST to the port sends:
// the connection is closed without a reply, its body's requests never reach the
// machine, and the log says why.
func TestServerDropsHTTP(t *testing.T) {
	r := start(t, "tcp:127.0.0.1:0", Server{})
	c := r.dial()
	c.send("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 14\r\n\r\nwriteb 0 0x11\n")
	c.expectEOF()

	// The same lines after a first qtest request are requests like any other.
	d := r.dial()
	d.do("readb 0", "OK 0x0000000000000000")
	d.do("POST / HTTP/1.1", `FAIL unknown command "POST"`)
	d.do("writeb 0 0x22", "OK")
	r.stop()

	if s := r.log.String(); !strings.Contains(s, "connection 1 from 127.0.0.1:") ||
		!strings.Contains(s, `dropped: its first line is an HTTP request ("POST / HTTP/1.1\r")`) {
		t.Errorf("log = %q, want the dropped connection and its first line", s)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.fakes) != 2 {
		t.Fatalf("%d machines made, want 2", len(r.fakes))
	}
	if w := r.fakes[0].writes; len(w) != 0 {
		t.Errorf("the HTTP connection's machine saw writes %v, want none", w)
	}
	if w := r.fakes[1].writes; len(w) != 1 {
		t.Errorf("the qtest connection's machine saw writes %v, want one", w)
	}
}

// TestServerDropsLongFirstLine checks that a first line too long to look at is
// dropped too (a request line with a long target), while a long line after the
// first is answered and the session goes on.
func TestServerDropsLongFirstLine(t *testing.T) {
	r := start(t, "tcp:127.0.0.1:0", Server{Limits: &Limits{MaxLine: 64}})
	c := r.dial()
	c.send("GET /" + strings.Repeat("a", 100) + " HTTP/1.1\r\nHost: x\r\n\r\n")
	c.expectEOF()
	d := r.dial()
	d.do("endianness", "OK little")
	d.do(strings.Repeat("x", 100), "FAIL line too long (more than 64 bytes)")
	d.do("endianness", "OK little")
	r.stop()
	if s := r.log.String(); !strings.Contains(s, "dropped: its first line is longer than 64 bytes") {
		t.Errorf("log = %q, want the dropped connection", s)
	}
}

// TestServerMaxConns fills the server, checks that one more connection is refused
// with a FAIL line (both one that waits and one that has sent a request already)
// and that a place freed is served again.
func TestServerMaxConns(t *testing.T) {
	for _, spec := range []string{"tcp:127.0.0.1:0", "unix:" + filepath.Join(t.TempDir(), "q.sock")} {
		t.Run(strings.SplitN(spec, ":", 2)[0], func(t *testing.T) {
			r := start(t, spec, Server{MaxConns: 2})
			a, b := r.dial(), r.dial()
			a.do("writeb 0 1", "OK")
			b.do("writeb 0 2", "OK")
			refusal := "FAIL too many connections: this server serves at most 2 at once (saccbook qtest --max-conns N); try again once one has closed"

			c := r.dial()
			if got := readReply(t, c.r); got != refusal {
				t.Errorf("over the cap: %q, want %q", got, refusal)
			}
			c.expectEOF()
			d := r.dial()
			d.send("readb 0\nreadb 8\n")
			if got := readReply(t, d.r); got != refusal {
				t.Errorf("over the cap, with requests sent: %q, want %q", got, refusal)
			}
			d.expectEOF()
			a.do("readb 0", "OK 0x0000000000000001") // the served ones are untouched

			// Once a connection has closed its place is free, as soon as the server
			// has seen it close.
			b.conn.Close()
			deadline := time.Now().Add(timeout)
			for {
				e := r.dial()
				e.send("readb 0\n")
				got := readReply(t, e.r)
				if got == "OK 0x0000000000000000" {
					break
				}
				if got != refusal || time.Now().After(deadline) {
					t.Fatalf("after one closed: %q", got)
				}
				e.conn.Close()
			}
			r.stop()
			if s := r.log.String(); !strings.Contains(s, "refused: 2 connections are open already, the most this server serves at once (--max-conns)") {
				t.Errorf("log = %q, want the refusals", s)
			}
		})
	}
}

// TestLimitsForTCP checks that TCP connections get the lower transfer and line
// limits and a Unix socket the full ones.
func TestLimitsForTCP(t *testing.T) {
	if l := LimitsFor(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}); l.MaxLine != TCPMaxLine || l.MaxTransfer != TCPMaxTransfer {
		t.Errorf("TCP limits %+v", l)
	}
	if l := LimitsFor(&net.UnixAddr{Name: "q.sock", Net: "unix"}); l.MaxLine != MaxLine || l.MaxTransfer != MaxTransfer {
		t.Errorf("Unix limits %+v", l)
	}
	// What one TCP connection can make the server hold: the line as read, its
	// text, and the largest reply.
	if pinned := 2*TCPMaxLine + 2*TCPMaxTransfer + 5; pinned > 8<<20 {
		t.Errorf("one TCP connection can pin %d bytes", pinned)
	}

	over := fmt.Sprintf("SIZE %#x is more than one request may move (%d bytes)", TCPMaxTransfer+1, TCPMaxTransfer)
	hexAll := "0x" + strings.Repeat("5a", TCPMaxTransfer)
	tcp := start(t, "tcp:127.0.0.1:0", Server{}).dial()
	for _, req := range []string{"read", "b64read"} {
		line := fmt.Sprintf("%s 0 %#x", req, TCPMaxTransfer+1)
		if got := tcp.request(line); !strings.Contains(got, over) {
			t.Errorf("TCP: %s = %q, want %q", line, got, over)
		}
	}
	for _, req := range []string{"memset 0 %#x 0", "write 0 %#x 0x00"} {
		line := fmt.Sprintf(req, TCPMaxTransfer+1)
		if got := tcp.request(line); !strings.Contains(got, over) {
			t.Errorf("TCP: %s = %q, want %q", line, got, over)
		}
	}
	// (Lines and replies of megabytes are compared, not printed.)
	if got := tcp.request(fmt.Sprintf("write 0 %#x %s", TCPMaxTransfer, hexAll)); got != "OK" {
		t.Errorf("TCP: a write of TCPMaxTransfer bytes = %.80q", got)
	}
	if got := tcp.request(fmt.Sprintf("read 0 %#x", TCPMaxTransfer)); got != "OK "+hexAll {
		t.Errorf("TCP: a read of TCPMaxTransfer bytes = %.80q..., want what was written", got)
	}
	tooLong := fmt.Sprintf("write 0 %#x %s", TCPMaxTransfer, hexAll+strings.Repeat("00", TCPMaxLine-TCPMaxTransfer))
	if got, want := tcp.request(tooLong), fmt.Sprintf("FAIL line too long (more than %d bytes)", TCPMaxLine); got != want {
		t.Errorf("TCP: a line over TCPMaxLine = %.80q, want %q", got, want)
	}
	tcp.do("endianness", "OK little")

	unix := start(t, "unix:"+filepath.Join(t.TempDir(), "q.sock"), Server{}).dial()
	if got := unix.request(fmt.Sprintf("read 0 %#x", TCPMaxTransfer+1)); got != "OK 0x"+strings.Repeat("00", TCPMaxTransfer+1) {
		t.Errorf("Unix: a read over the TCP limit = %.40q..., want its data", got)
	}
}

// request sends one line and returns the reply.
func (c *client) request(line string) string {
	c.t.Helper()
	c.send(line + "\n")
	return readReply(c.t, c.r)
}

// TestListenStaleSocket checks the three things a Unix socket path may hold when
// Listen finds it taken: a stale socket is replaced (and said so), a live one and a
// file that is not a socket are left alone with an error saying why.
func TestListenStaleSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "q.sock")
	// A server that died leaves its socket file behind: nothing listens on it.
	dead, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	dead.SetUnlinkOnClose(false)
	dead.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("the dead server's socket is gone: %v", err)
	}

	var log syncbuf.Buffer
	ln, err := Listen("unix:"+path, &log)
	if err != nil {
		t.Fatalf("Listen on a stale socket: %v", err)
	}
	if want := "qtest: replaced the stale socket " + path + ", which no server was listening on\n"; log.String() != want {
		t.Errorf("log = %q, want %q", log.String(), want)
	}
	// The new listener is the one answering.
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	c := dial(t, "unix", path)
	if got := readReply(t, c.r); got != "hello" {
		t.Errorf("the socket answered %q", got)
	}

	// While it listens, the socket is in use and stays.
	log.Reset()
	if l2, err := Listen("unix:"+path, &log); err == nil {
		l2.Close()
		t.Error("Listen on a live server's socket succeeded")
	} else if !strings.Contains(err.Error(), "another server is listening on it") {
		t.Errorf("Listen on a live socket: %v", err)
	}
	if log.String() != "" {
		t.Errorf("log = %q after refusing a live socket", log.String())
	}
	ln.Close()

	// A file that is not a socket is never removed.
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if l3, err := Listen("unix:"+file, nil); err == nil {
		l3.Close()
		t.Error("Listen on a regular file succeeded")
	} else if !strings.Contains(err.Error(), "it exists and is not a socket") {
		t.Errorf("Listen on a regular file: %v", err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "mine" {
		t.Errorf("the file is now %q, %v", b, err)
	}
}

// TestServerDropsClientNotReading sends requests with large replies and reads
// none: the server gives up on the connection instead of waiting on it for
// ever, says why, and serves the next client in its place.
func TestServerDropsClientNotReading(t *testing.T) {
	r := start(t, "tcp:127.0.0.1:0", Server{MaxConns: 1, replyTimeout: 100 * time.Millisecond})
	conn, err := net.DialTimeout("tcp", r.addr, timeout)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	// 32 replies of 2 MiB each: more than any socket buffers hold.
	if _, err := conn.Write([]byte(strings.Repeat(fmt.Sprintf("read 0 %#x\n", TCPMaxTransfer), 32))); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(timeout)
	for {
		e := r.dial()
		e.send("endianness\n")
		got := readReply(t, e.r)
		if got == "OK little" {
			break
		}
		if !strings.HasPrefix(got, "FAIL too many connections") || time.Now().After(deadline) {
			t.Fatalf("while the first client does not read: %q", got)
		}
		e.conn.Close()
	}
	r.stop()
	if s := r.log.String(); !strings.Contains(s, "connection 1 from 127.0.0.1:") ||
		!strings.Contains(s, "dropped: its client has not read a reply for 100ms") {
		t.Errorf("log = %q, want the dropped connection", s)
	}
}
