package qtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saccbook/saccbook/internal/syncbuf"
)

// timeout bounds every wait in these tests, so that a server that fails to answer
// fails the test instead of hanging it.
const timeout = 10 * time.Second

func TestServe(t *testing.T) {
	in := "readb 0\r\n" +
		"\n" +
		"writel 0x10 0x11223344\n" +
		"bogus\n" +
		"readl 0x10\n" +
		"clock_step\n" +
		"read 0x10 4" // a last line without a newline is still answered
	want := "OK 0x0000000000000000\n" +
		"FAIL empty request\n" +
		"OK\n" +
		"FAIL unknown command \"bogus\"\n" +
		"OK 0x0000000011223344\n" +
		"OK 100\n" +
		"OK 0x44332211\n"
	var out bytes.Buffer
	if err := Serve(context.Background(), strings.NewReader(in), &out, newFake(fakeEvents...), nil); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if out.String() != want {
		t.Errorf("Serve wrote\n%s\nwant\n%s", out.String(), want)
	}

	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"\n", "FAIL empty request\n"},
		{"\r", "FAIL empty request\n"},
		{"readb 0\n", "OK 0x0000000000000000\n"},
		{"readb 0\n\n", "OK 0x0000000000000000\nFAIL empty request\n"},
	} {
		out.Reset()
		if err := Serve(context.Background(), strings.NewReader(tt.in), &out, newFake(), nil); err != nil {
			t.Fatalf("Serve(%q): %v", tt.in, err)
		}
		if out.String() != tt.want {
			t.Errorf("Serve(%q) wrote %q, want %q", tt.in, out.String(), tt.want)
		}
	}
}

func TestServeLineTooLong(t *testing.T) {
	const max = 50
	in := "readb 0\n" +
		strings.Repeat("x", max+1) + "\n" + // one byte too long
		"readb " + strings.Repeat("0", max-6) + "\n" + // exactly max: served
		strings.Repeat("y", 10*max) + "\n" +
		"endianness\n" +
		strings.Repeat("z", 3*max) // too long, at EOF
	var out bytes.Buffer
	s := NewSession(newFake(), nil)
	if err := serve(context.Background(), strings.NewReader(in), &out, s, serveOptions{maxLine: max}); err != nil {
		t.Fatalf("serve: %v", err)
	}
	tooLong := fmt.Sprintf("FAIL line too long (more than %d bytes)", max)
	want := strings.Join([]string{
		"OK 0x0000000000000000", tooLong, "OK 0x0000000000000000", tooLong, "OK little", tooLong, "",
	}, "\n")
	if out.String() != want {
		t.Errorf("serve wrote %q, want %q", out.String(), want)
	}
}

// repeatReader yields n copies of c, then rest.
type repeatReader struct {
	c    byte
	n    int
	rest io.Reader
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return r.rest.Read(p)
	}
	k := min(len(p), r.n)
	p[0] = r.c
	for i := 1; i < k; i *= 2 {
		copy(p[i:k], p[:i])
	}
	r.n -= k
	return k, nil
}

// TestServeMaxLine checks the real limit once, through a reader that never holds the
// long line in memory.
func TestServeMaxLine(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 128 MiB")
	}
	in := &repeatReader{c: ' ', n: MaxLine - len("endianness"), rest: strings.NewReader("endianness\n" + strings.Repeat(" ", MaxLine+1) + "\nendianness\n")}
	var out bytes.Buffer
	if err := Serve(context.Background(), in, &out, newFake(), nil); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if want := fmt.Sprintf("OK little\nFAIL line too long (more than %d bytes)\nOK little\n", MaxLine); out.String() != want {
		t.Errorf("Serve wrote %q, want %q", out.String(), want)
	}
}

// serveAsync runs Serve in a goroutine and returns a function that waits for its
// result.
func serveAsync(ctx context.Context, r io.Reader, w io.Writer, m Machine) (wait func() error) {
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, r, w, m, nil) }()
	return func() error {
		select {
		case err := <-done:
			return err
		case <-time.After(timeout):
			return errors.New("Serve did not return")
		}
	}
}

// readReply reads one reply line, failing the test if none comes in time.
func readReply(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	type result struct {
		s   string
		err error
	}
	c := make(chan result, 1)
	go func() {
		s, err := r.ReadString('\n')
		c <- result{s, err}
	}()
	select {
	case res := <-c:
		if res.err != nil {
			t.Fatalf("reading a reply: %v (got %q)", res.err, res.s)
		}
		return strings.TrimSuffix(res.s, "\n")
	case <-time.After(timeout):
		t.Fatal("no reply: Serve did not flush")
		return ""
	}
}

// TestServeInteractive plays a client that sends one line and waits for its reply
// before sending the next, over synchronous pipes: if Serve held a reply in its
// buffer, the test would time out.
func TestServeInteractive(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	wait := serveAsync(context.Background(), inR, outW, newFake(fakeEvents...))
	replies := bufio.NewReader(outR)
	for _, st := range []step{
		{"writeb 0 0x42", "OK"},
		{"readb 0", "OK 0x0000000000000042"},
		{"clock_step", "OK 100"},
		{"nope", `FAIL unknown command "nope"`},
	} {
		if _, err := io.WriteString(inW, st.line+"\n"); err != nil {
			t.Fatal(err)
		}
		if got := readReply(t, replies); got != st.want {
			t.Errorf("reply to %q = %q, want %q", st.line, got, st.want)
		}
	}

	// Two lines at once, then half a line: both replies must arrive although
	// input is still buffered.
	if _, err := io.WriteString(inW, "readb 0\nreadw 0\nrea"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"OK 0x0000000000000042", "OK 0x0000000000000042"} {
		if got := readReply(t, replies); got != want {
			t.Errorf("reply = %q, want %q", got, want)
		}
	}
	if _, err := io.WriteString(inW, "dl 0\n"); err != nil {
		t.Fatal(err)
	}
	if got := readReply(t, replies); got != "OK 0x0000000000000042" {
		t.Errorf("reply = %q", got)
	}

	inW.Close()
	if err := wait(); err != nil {
		t.Errorf("Serve = %v, want nil at EOF", err)
	}
}

// TestServeCancel checks that cancelling ctx stops a Serve blocked reading a
// connection, which has read deadlines.
func TestServeCancel(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	ctx, cancel := context.WithCancel(context.Background())
	wait := serveAsync(ctx, server, server, newFake())
	replies := bufio.NewReader(client)
	io.WriteString(client, "readb 0\n")
	if got := readReply(t, replies); got != "OK 0x0000000000000000" {
		t.Errorf("reply = %q", got)
	}
	cancel()
	if err := wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("Serve after cancel = %v, want context.Canceled", err)
	}

	// A context that is already done serves nothing.
	var out bytes.Buffer
	if err := Serve(ctx, strings.NewReader("readb 0\n"), &out, newFake(), nil); !errors.Is(err, context.Canceled) || out.Len() != 0 {
		t.Errorf("Serve with a done context = %v, wrote %q", err, out.String())
	}
}

type errWriter struct{ err error }

func (w errWriter) Write(p []byte) (int, error) { return 0, w.err }

type errReader struct {
	data string
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestServeErrors(t *testing.T) {
	boom := errors.New("boom")
	if err := Serve(context.Background(), strings.NewReader("readb 0\n"), errWriter{boom}, newFake(), nil); !errors.Is(err, boom) {
		t.Errorf("Serve with a failing writer = %v, want boom", err)
	}
	// A line cut short by a read error is not answered.
	var out bytes.Buffer
	r := &errReader{data: "readb 0\nreadb 1", err: boom}
	if err := Serve(context.Background(), r, &out, newFake(), nil); !errors.Is(err, boom) {
		t.Errorf("Serve with a failing reader = %v, want boom", err)
	}
	if out.String() != "OK 0x0000000000000000\n" {
		t.Errorf("Serve with a failing reader wrote %q", out.String())
	}
}

// TestServeDetachesTrace checks that a machine outliving Serve stops tracing to the
// session's log.
func TestServeDetachesTrace(t *testing.T) {
	var log, out bytes.Buffer
	f := newFake()
	if err := Serve(context.Background(), strings.NewReader("trace on\nwriteb 0 1\n"), &out, f, &log); err != nil {
		t.Fatal(err)
	}
	n := log.Len()
	if n == 0 {
		t.Fatal("no trace output")
	}
	f.Write(0, 1, 2)
	if log.Len() != n {
		t.Errorf("trace output after Serve returned: %q", log.String()[n:])
	}
}

func TestListen(t *testing.T) {
	for _, spec := range []string{"", "tcp", "tcp:", "tcp:127.0.0.1", "tcp:127.0.0.1:", "udp:127.0.0.1:0", "unix:", "unix", "127.0.0.1:0", "TCP:127.0.0.1:0"} {
		if ln, err := Listen(spec, nil); err == nil {
			ln.Close()
			t.Errorf("Listen(%q) succeeded, want an error", spec)
		}
	}
	ln, err := Listen("tcp:127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !IsLocal(ln.Addr()) {
		t.Errorf("IsLocal(%v) = false", ln.Addr())
	}
	ln.Close()
	path := filepath.Join(t.TempDir(), "q.sock")
	ln, err = Listen("unix:"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !IsLocal(ln.Addr()) {
		t.Errorf("IsLocal(%v) = false", ln.Addr())
	}
	ln.Close()
	if IsLocal(&net.TCPAddr{IP: net.IPv4zero, Port: 1}) || IsLocal(&net.TCPAddr{IP: net.ParseIP("192.0.2.1")}) || IsLocal(nil) {
		t.Error("IsLocal is true for a non-loopback address")
	}
	if !IsLocal(&net.TCPAddr{IP: net.IPv6loopback}) {
		t.Error("IsLocal(::1) = false")
	}
}

// client is one qtest connection in a test.
type client struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dial(t *testing.T, network, addr string) *client {
	t.Helper()
	conn, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &client{t, conn, bufio.NewReader(conn)}
}

func (c *client) do(line, want string) {
	c.t.Helper()
	if _, err := io.WriteString(c.conn, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
	if got := readReply(c.t, c.r); got != want {
		c.t.Errorf("reply to %q = %q, want %q", line, got, want)
	}
}

// expectEOF checks that the server closed the connection.
func (c *client) expectEOF() {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(timeout))
	if s, err := c.r.ReadString('\n'); err != io.EOF {
		c.t.Errorf("read after shutdown = %q, %v; want EOF", s, err)
	}
}

func TestServeListener(t *testing.T) {
	for _, spec := range []string{"tcp:127.0.0.1:0", "unix:" + filepath.Join(t.TempDir(), "q.sock")} {
		t.Run(strings.SplitN(spec, ":", 2)[0], func(t *testing.T) {
			ln, err := Listen(spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			var made atomic.Int32
			newMachine := func() (Machine, error) {
				switch made.Add(1) {
				case 3:
					return nil, errors.New("out of machines")
				case 5:
					panic("the machine factory broke")
				}
				return newFake(fakeEvents...), nil
			}
			var log syncbuf.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- ServeListener(ctx, ln, newMachine, &log) }()

			network, addr := ln.Addr().Network(), ln.Addr().String()
			a, b := dial(t, network, addr), dial(t, network, addr)
			// Both connections are open at once, and each has its own machine.
			a.do("writeb 0 0x11", "OK")
			b.do("writeb 0 0x22", "OK")
			a.do("readb 0", "OK 0x0000000000000011")
			b.do("readb 0", "OK 0x0000000000000022")
			a.do("clock_step", "OK 100")
			b.do("clock_set 1000", "OK 1000")
			a.do("clock_step", "OK 250")
			b.do("clock_step", "FAIL no pending events")
			a.do("trace on", "OK")
			a.do("outb 0x80 1", "OK")

			// A third connection whose machine cannot be made is closed; the
			// listener goes on serving.
			// (Nothing is sent on it: closing a socket with unread input resets it
			// instead of ending it cleanly.)
			c := dial(t, network, addr)
			c.expectEOF()
			d := dial(t, network, addr)
			d.do("readb 0", "OK 0x0000000000000000")
			// So is one whose machine factory panics.
			e := dial(t, network, addr)
			e.expectEOF()
			d.do("readb 0", "OK 0x0000000000000000")

			// A client that hangs up is forgotten.
			b.conn.Close()

			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("ServeListener = %v, want nil after cancel", err)
				}
			case <-time.After(timeout):
				t.Fatal("ServeListener did not return after cancel")
			}
			a.expectEOF()
			d.expectEOF()
			if _, err := net.DialTimeout(network, addr, timeout); err == nil {
				t.Error("listener still accepts after ServeListener returned")
			}
			s := log.String()
			if !strings.Contains(s, "pio_write port=0x80") || !strings.Contains(s, "cannot create a machine: out of machines") ||
				!strings.Contains(s, "internal error: the machine factory broke") {
				t.Errorf("log = %q, want a trace line, the machine error and the panic", s)
			}
		})
	}
}

// TestServeListenerAcceptError checks that a listener that fails for good ends
// ServeListener with its error, after the open connections are closed.
func TestServeListenerAcceptError(t *testing.T) {
	ln, err := Listen("tcp:127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	fl := &failingListener{Listener: ln, fail: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		done <- ServeListener(context.Background(), fl, func() (Machine, error) { return newFake(), nil }, nil)
	}()
	a := dial(t, "tcp", ln.Addr().String())
	a.do("readb 0", "OK 0x0000000000000000")
	close(fl.fail)
	// Wake the blocked Accept so that it sees the failure.
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
	}
	select {
	case err := <-done:
		if !errors.Is(err, errBroken) {
			t.Errorf("ServeListener = %v, want errBroken", err)
		}
	case <-time.After(timeout):
		t.Fatal("ServeListener did not return")
	}
	a.expectEOF()
}

var errBroken = errors.New("listener broken")

type failingListener struct {
	net.Listener
	fail chan struct{}
}

func (l *failingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	select {
	case <-l.fail:
		if c != nil {
			c.Close()
		}
		return nil, errBroken
	default:
	}
	return c, err
}
