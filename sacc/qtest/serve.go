package qtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/saccbook/saccbook/internal/lineio"
	"github.com/saccbook/saccbook/sacc/sim"
)

// MaxLine is the longest request line Serve accepts, not counting its newline. It
// bounds the memory one request can take while still leaving room for a `write` of
// 32 MiB of hex or a `b64write` of 48 MiB; longer lines are answered
// "FAIL line too long" and skipped.
const MaxLine = 64 << 20

// The limits of a TCP connection. Any web page the learner opens can make the
// browser connect to a loopback port, and a connection of someone else's is
// served on a machine the learner is paying memory for, so one TCP connection
// must not pin more than a few MiB besides its machine: a request line of at
// most TCPMaxLine (held once as read and once as the request's text) and a
// reply of at most 2·TCPMaxTransfer+5 bytes (a read's hex) come to about
// 6 MiB. The line leaves room for a `write` of a whole TCPMaxTransfer in hex.
// A client moves a larger range in several requests. A Unix socket and
// standard input keep MaxLine and MaxTransfer: only this host's users reach
// them, and no browser can.
const (
	TCPMaxTransfer = 1 << 20
	TCPMaxLine     = 2*TCPMaxTransfer + 1024
)

// DefaultMaxConns is how many connections ServeListener serves at once unless
// told otherwise. Every connection has a machine of its own, whose RAM is
// allocated as it is written, so the cap bounds the memory all clients together
// can pin: at most DefaultMaxConns times the RAM size (1 GiB with the default
// 128 MiB), besides the few MiB of each connection's buffers. A learner needs a
// connection or two; a test suite that runs its cases in parallel, a few more.
const DefaultMaxConns = 8

// Limits bounds what one connection may make the server hold.
type Limits struct {
	MaxLine     int    // the longest request line; longer ones get "FAIL line too long"
	MaxTransfer uint64 // the most bytes one read, write, b64read, b64write or memset moves
}

// LimitsFor is the limits ServeListener applies to connections on a listener at
// addr: TCPMaxLine and TCPMaxTransfer on TCP, MaxLine and MaxTransfer otherwise.
func LimitsFor(addr net.Addr) Limits {
	if _, ok := addr.(*net.TCPAddr); ok {
		return Limits{MaxLine: TCPMaxLine, MaxTransfer: TCPMaxTransfer}
	}
	return Limits{MaxLine: MaxLine, MaxTransfer: MaxTransfer}
}

// Serve reads requests from r line by line and writes one reply line each to w, until
// EOF or ctx is done. It flushes w whenever it has no further complete request line
// buffered (so an interactive client that waits for each reply is never stuck), and at
// the end.
//
// A final line without a newline is still answered. Serve returns nil at EOF,
// ctx.Err() when ctx ended it, and otherwise the read or write error that did. When
// ctx is done, Serve unblocks a pending read or write on r or w if they have
// SetReadDeadline or SetWriteDeadline (a net.Conn does); a read on a plain io.Reader
// such as a terminal cannot be interrupted, and Serve returns once it does.
//
// When Serve returns, tracing that a `trace on` request turned on is off again.
func Serve(ctx context.Context, r io.Reader, w io.Writer, m Machine, log io.Writer) error {
	return serve(ctx, r, w, NewSession(m, log), serveOptions{maxLine: MaxLine})
}

// serveOptions is how a connection is served beyond the protocol itself.
type serveOptions struct {
	maxLine int
	// dropHTTP ends the session, before answering anything, when its first
	// line is an HTTP request line (see errHTTP).
	dropHTTP bool
	// replyTimeout, if not zero, is how long writing one reply may take: a
	// client that sends requests but reads no replies fills the socket, and the
	// session would wait on it for ever, holding its place (see errNotReading).
	replyTimeout time.Duration
}

// replyTimeout is how long a listener's connection may leave a reply unread
// before it is dropped. A person at a terminal reads every reply as it comes; a
// program that stops reading for this long has stopped for good.
const replyTimeout = time.Minute

// errNotReading is why a connection whose client reads no replies is dropped.
type errNotReading struct{ after time.Duration }

func (e *errNotReading) Error() string {
	return fmt.Sprintf("its client has not read a reply for %v (it sends requests but reads no replies)", e.after)
}

// httpRequestLine matches the request line of HTTP/1.x, and the preface of
// HTTP/2 ("PRI * HTTP/2.0"): a method token (any, since a page's fetch may use
// any method), a target, and the version (RFC 9112 §3). No qtest request
// looks like this: "HTTP/1.1" is neither a number nor hex or base64 data.
var httpRequestLine = regexp.MustCompile(`^[!#$%&'*+.^_|~0-9A-Za-z` + "`" + `-]+ [^ ]+ HTTP/[0-9](\.[0-9])?\r?$`)

// errHTTP is why a connection whose first line is an HTTP request is dropped:
// a web page can make the browser send one to a loopback port (a text/plain
// POST needs no CORS preflight), and its body lines would be run as requests.
type errHTTP struct {
	line    string
	tooLong bool
	max     int
}

func (e *errHTTP) Error() string {
	if e.tooLong {
		return fmt.Sprintf("its first line is longer than %d bytes, too long to tell from an HTTP request, which a web page may have sent; nothing on it is run",
			e.max)
	}
	return fmt.Sprintf("its first line is an HTTP request (%s), which a web page may have sent; qtest does not speak HTTP, so nothing on it is run",
		quote(e.line))
}

// serve is Serve with the session and options given, so that tests can use small
// limits.
func serve(ctx context.Context, r io.Reader, w io.Writer, s *Session, opt serveOptions) (err error) {
	maxLine := opt.maxLine
	defer s.Close()
	stop := context.AfterFunc(ctx, func() {
		now := time.Now()
		if d, ok := r.(interface{ SetReadDeadline(time.Time) error }); ok {
			d.SetReadDeadline(now)
		}
		if d, ok := w.(interface{ SetWriteDeadline(time.Time) error }); ok {
			d.SetWriteDeadline(now)
		}
	})
	defer stop()

	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriterSize(w, 64<<10)
	defer func() {
		ferr := bw.Flush()
		switch {
		case ctx.Err() != nil:
			// Errors after cancellation come from the deadlines set above.
			err = ctx.Err()
		case err == nil:
			err = ferr
		}
	}()

	var line []byte
	for first := true; ; first = false {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var tooLong, got bool
		var rerr error
		line, tooLong, got, rerr = lineio.ReadLine(br, line[:0], maxLine)
		if got {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if first && opt.dropHTTP && (tooLong || httpRequestLine.Match(line)) {
				// A first line too long to look at may be a request line with a
				// long target (browsers send URLs of megabytes): drop it as well.
				return &errHTTP{line: string(line), tooLong: tooLong, max: maxLine}
			}
			var reply string
			if tooLong {
				reply = fmt.Sprintf("FAIL line too long (more than %d bytes)", maxLine)
			} else {
				reply = s.Exec(string(line))
			}
			if opt.replyTimeout > 0 {
				// From when the reply is ready: a long clock_step is not the
				// client's doing.
				if d, ok := w.(interface{ SetWriteDeadline(time.Time) error }); ok {
					d.SetWriteDeadline(time.Now().Add(opt.replyTimeout))
					// Cancellation sets a deadline of now; one set here after it
					// would undo it.
					if ctx.Err() != nil {
						return ctx.Err()
					}
				}
			}
			bw.WriteString(reply)
			if werr := bw.WriteByte('\n'); werr != nil {
				return opt.writeError(werr)
			}
			if !lineBuffered(br) {
				if werr := bw.Flush(); werr != nil {
					return opt.writeError(werr)
				}
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
		if cap(line) > 1<<20 {
			line = nil // do not keep a huge buffer alive for the short lines that follow
		}
	}
}

// writeError says why a reply could not be written: a reply timeout is the
// client's not reading (the caller reports cancellation, which also ends writes
// by a deadline, on its own).
func (opt serveOptions) writeError(err error) error {
	if opt.replyTimeout > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		return &errNotReading{after: opt.replyTimeout}
	}
	return err
}

// lineBuffered reports whether a complete request line is already waiting in br.
// Only then is the reply left unflushed: the next reply follows at once. Flushing
// whenever no complete line is waiting (rather than only when nothing at all is
// buffered) also serves a client that sent half its next line and then waits.
func lineBuffered(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// Listen parses "tcp:HOST:PORT" or "unix:PATH" and returns a listener.
//
// HOST may be a name or an address (IPv6 in brackets), PORT may be 0 for any free
// port: ln.Addr() says which. A TCP host that is not a loopback address, including an
// empty HOST (every interface), is allowed, because a learner may want to drive the
// machine from another box; but the protocol has no authentication and lets the
// client rewrite all of guest memory, so Listen's caller should warn: IsLocal tells
// it whether to.
//
// A Unix socket file is removed when the listener is closed. One left behind by a
// server that died (kill -9, a crash) is stale: nothing listens on it any more, so
// connecting to it is refused. Listen then removes it and listens in its place, as
// tmux and gpg-agent do with theirs, and says so on log (which may be nil): the
// learner named that path for this server, and the probe tells a dead server's
// socket from a live one, whose socket is never touched. A path that is not a
// socket is never removed either. (Two servers started on the same stale path at
// the same instant could both replace it; only the last one would be reachable.)
func Listen(spec string, log io.Writer) (net.Listener, error) {
	scheme, rest, _ := strings.Cut(spec, ":")
	switch scheme {
	case "tcp":
		_, port, err := net.SplitHostPort(rest)
		if err != nil || port == "" {
			return nil, fmt.Errorf("qtest: listen address %q: want tcp:HOST:PORT", spec)
		}
		return net.Listen("tcp", rest)
	case "unix":
		if rest == "" {
			return nil, fmt.Errorf("qtest: listen address %q: want unix:PATH", spec)
		}
		return listenUnix(rest, log)
	}
	return nil, fmt.Errorf("qtest: listen address %q: want tcp:HOST:PORT or unix:PATH", spec)
}

// listenUnix listens on the socket path, replacing a stale socket there (see
// Listen).
func listenUnix(path string, log io.Writer) (net.Listener, error) {
	ln, err := net.Listen("unix", path)
	if err == nil || !errors.Is(err, syscall.EADDRINUSE) {
		return ln, err
	}
	fi, serr := os.Lstat(path)
	if serr != nil {
		return nil, err
	}
	if fi.Mode().Type() != os.ModeSocket {
		return nil, fmt.Errorf("qtest: cannot listen on %s: it exists and is not a socket (left as it is; pick another path)", path)
	}
	c, derr := net.DialTimeout("unix", path, time.Second)
	if derr == nil {
		c.Close()
		return nil, fmt.Errorf("qtest: cannot listen on %s: another server is listening on it (stop that one, or pick another path)", path)
	}
	if !errors.Is(derr, syscall.ECONNREFUSED) {
		return nil, fmt.Errorf("qtest: cannot listen on %s: it is in use, and probing it failed (%v); if no server uses it, remove it with: rm %s",
			path, derr, path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("qtest: %s is a stale socket that no server listens on, but removing it failed: %w; remove it with: rm %s",
			path, err, path)
	}
	if log != nil {
		fmt.Fprintf(log, "qtest: replaced the stale socket %s, which no server was listening on\n", path)
	}
	return net.Listen("unix", path)
}

// IsLocal reports whether only this host can reach addr: a Unix socket or a TCP
// loopback address. The CLI warns when it serves on an address that is not.
func IsLocal(addr net.Addr) bool {
	switch a := addr.(type) {
	case *net.UnixAddr:
		return true
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	}
	return false
}

// ServeListener serves ln with a Server of newMachine and log and the defaults
// for the rest (DefaultMaxConns, LimitsFor(ln.Addr())).
func ServeListener(ctx context.Context, ln net.Listener, newMachine func() (Machine, error), log io.Writer) error {
	return (&Server{NewMachine: newMachine, Log: log}).Serve(ctx, ln)
}

// A Server serves the protocol on a listener, every connection on a fresh machine
// of its own.
type Server struct {
	// NewMachine makes each connection's machine.
	NewMachine func() (Machine, error)
	// Log receives the trace lines of every connection that turns tracing on and
	// what went wrong on a connection; writes to it are serialized, so it need
	// not be safe for concurrent use. nil discards them.
	Log io.Writer
	// MaxConns is how many connections are served at once; 0 means
	// DefaultMaxConns. One more is answered with one FAIL line saying so and
	// closed.
	MaxConns int
	// Limits applies to every connection; nil, or a zero field, means that of
	// LimitsFor(ln.Addr()).
	Limits *Limits

	replyTimeout time.Duration // 0 means replyTimeout; lowered by tests
}

// refusing caps the refused connections being closed at once (see refuse).
const refusing = 64

// Serve accepts connections until ctx is done; every connection gets a fresh
// machine from NewMachine and its own Session, served concurrently, so that two
// clients never see each other's state. A connection's errors never stop the
// listener: they are reported on Log (as is a failure of NewMachine, after which that
// connection is closed without a reply). A connection whose first line is an HTTP
// request is closed before anything on it runs (see errHTTP), and one whose
// client leaves a reply unread for a minute is closed too (see errNotReading), so
// that neither holds its place for ever. Serve closes the
// listener when ctx is done, closes the connections still open, waits for them to
// end and returns nil. If Accept fails for good before that, it does the same and
// returns the error.
func (srv *Server) Serve(ctx context.Context, ln net.Listener) error {
	log := srv.Log
	if log == nil {
		log = io.Discard
	}
	log = &lockedWriter{w: log}
	maxConns := srv.MaxConns
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	timeout := srv.replyTimeout
	if timeout <= 0 {
		timeout = replyTimeout
	}
	lim := LimitsFor(ln.Addr())
	if srv.Limits != nil {
		if srv.Limits.MaxLine > 0 {
			lim.MaxLine = srv.Limits.MaxLine
		}
		if srv.Limits.MaxTransfer > 0 {
			lim.MaxTransfer = srv.Limits.MaxTransfer
		}
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // before wg.Wait: connections close when Serve ends
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer ln.Close()

	open := make(chan struct{}, maxConns)    // a token for each connection served
	closing := make(chan struct{}, refusing) // a token for each refusal being closed
	var id uint64
	var delay time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !temporary(err) {
				return err
			}
			// Out of file descriptors and the like: wait and retry, as net/http
			// does, instead of giving up on every future client.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			fmt.Fprintf(log, "qtest: accept: %v; retrying in %v\n", err, delay)
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			continue
		}
		delay = 0
		id++
		name := connName(conn, id)
		select {
		case open <- struct{}{}:
		default:
			fmt.Fprintf(log, "qtest: %s: refused: %d connections are open already, the most this server serves at once (--max-conns)\n", name, maxConns)
			select {
			case closing <- struct{}{}:
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-closing }()
					refuse(ctx, conn, maxConns)
				}()
			default:
				// Refusals are arriving faster than they close: spend nothing more
				// on this one.
				conn.Close()
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-open }()
			serveConn(ctx, conn, name, srv.NewMachine, log, lim, timeout)
		}()
	}
}

// refuseLinger is how long a refused connection is read from, after the refusal,
// before it is closed: closing a TCP socket with unread input resets it, and the
// reset can reach the client before it has read the refusal.
const refuseLinger = 500 * time.Millisecond

// refuse answers a connection over the cap with one FAIL line, which a client reads
// as the reply to its first request, and closes it.
func refuse(ctx context.Context, conn net.Conn, maxConns int) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	conn.SetDeadline(time.Now().Add(refuseLinger))
	fmt.Fprintf(conn, "FAIL too many connections: this server serves at most %d at once (saccbook qtest --max-conns N); try again once one has closed\n", maxConns)
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(conn, 1<<20))
}

func temporary(err error) bool {
	var t interface{ Temporary() bool }
	return !errors.Is(err, net.ErrClosed) && errors.As(err, &t) && t.Temporary()
}

// connName names a connection in the log: its number and, where there is one, the
// client's address.
func connName(conn net.Conn, id uint64) string {
	name := fmt.Sprintf("connection %d", id)
	if a := conn.RemoteAddr(); a != nil && a.String() != "" && a.String() != "@" {
		name += " from " + a.String()
	}
	return name
}

// serveConn serves one connection and reports, rather than returns, what went wrong:
// nothing that happens on one connection may reach the listener.
func serveConn(ctx context.Context, conn net.Conn, name string, newMachine func() (Machine, error), log io.Writer, lim Limits, timeout time.Duration) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := sim.Run(func() error {
		m, err := newMachine()
		if err == nil && m == nil {
			err = errors.New("no machine")
		}
		if err != nil {
			fmt.Fprintf(log, "qtest: %s: cannot create a machine: %v\n", name, err)
			return nil
		}
		s := NewSession(m, log)
		s.maxTransfer = lim.MaxTransfer
		err = serve(ctx, conn, conn, s, serveOptions{maxLine: lim.MaxLine, dropHTTP: true, replyTimeout: timeout})
		var h *errHTTP
		var nr *errNotReading
		switch {
		case errors.As(err, &h), errors.As(err, &nr):
			fmt.Fprintf(log, "qtest: %s: dropped: %v\n", name, err)
		case err != nil && ctx.Err() == nil && !errors.Is(err, net.ErrClosed):
			fmt.Fprintf(log, "qtest: %s: %v\n", name, err)
		}
		return nil
	}); err != nil {
		fmt.Fprintf(log, "qtest: %s: internal error: %v\n", name, caught(err))
	}
}

// lockedWriter serializes writes from concurrent sessions to one log.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
