package qtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/saccbook/saccbook/internal/lineio"
	"github.com/saccbook/saccbook/sacc/sim"
)

// MaxLine is the longest request line Serve accepts, not counting its newline. It
// bounds the memory one request can take while still leaving room for a `write` of
// 32 MiB of hex or a `b64write` of 48 MiB; longer lines are answered
// "FAIL line too long" and skipped.
const MaxLine = 64 << 20

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
	return serve(ctx, r, w, NewSession(m, log), MaxLine)
}

// serve is Serve with the session and line limit given, so that tests can use small
// limits.
func serve(ctx context.Context, r io.Reader, w io.Writer, s *Session, maxLine int) (err error) {
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
	for {
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
			var reply string
			if tooLong {
				reply = fmt.Sprintf("FAIL line too long (more than %d bytes)", maxLine)
			} else {
				reply = s.Exec(string(line))
			}
			bw.WriteString(reply)
			if werr := bw.WriteByte('\n'); werr != nil {
				return werr
			}
			if !lineBuffered(br) {
				if werr := bw.Flush(); werr != nil {
					return werr
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
// it whether to. A Unix socket file is removed when the listener is closed; a stale
// one left by a crash makes Listen fail with "address already in use" rather than
// be deleted, since it may belong to a running server.
func Listen(spec string) (net.Listener, error) {
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
		return net.Listen("unix", rest)
	}
	return nil, fmt.Errorf("qtest: listen address %q: want tcp:HOST:PORT or unix:PATH", spec)
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

// ServeListener accepts connections until ctx is done; every connection gets a fresh
// machine from newMachine and its own Session, served concurrently, so that two
// clients never see each other's state. A connection's errors never stop the
// listener: they are reported on log (as is a failure of newMachine, after which that
// connection is closed without a reply). ServeListener closes the listener when ctx is
// done, closes the connections still open, waits for them to end and returns nil. If
// Accept fails for good before that, it does the same and returns the error.
//
// log receives the trace lines of every connection that turns tracing on; writes to it
// are serialized, so it need not be safe for concurrent use.
func ServeListener(ctx context.Context, ln net.Listener, newMachine func() (Machine, error), log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	log = &lockedWriter{w: log}

	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // before wg.Wait: connections close when ServeListener ends
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer ln.Close()

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
		wg.Add(1)
		go func(id uint64) {
			defer wg.Done()
			serveConn(ctx, conn, id, newMachine, log)
		}(id)
	}
}

func temporary(err error) bool {
	var t interface{ Temporary() bool }
	return !errors.Is(err, net.ErrClosed) && errors.As(err, &t) && t.Temporary()
}

// serveConn serves one connection and reports, rather than returns, what went wrong:
// nothing that happens on one connection may reach the listener.
func serveConn(ctx context.Context, conn net.Conn, id uint64, newMachine func() (Machine, error), log io.Writer) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	name := fmt.Sprintf("connection %d", id)
	if a := conn.RemoteAddr(); a != nil && a.String() != "" && a.String() != "@" {
		name += " from " + a.String()
	}
	if err := sim.Run(func() error {
		m, err := newMachine()
		if err == nil && m == nil {
			err = errors.New("no machine")
		}
		if err != nil {
			fmt.Fprintf(log, "qtest: %s: cannot create a machine: %v\n", name, err)
			return nil
		}
		err = Serve(ctx, conn, conn, m, log)
		if err != nil && ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
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
