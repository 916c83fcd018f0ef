package live

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// readToTheEnd reads a dropped viewer's messages up to the close and returns the
// last one and the close status.
func readToTheEnd(t *testing.T, c *client) (msg, websocket.StatusCode) {
	t.Helper()
	var last msg
	for {
		m, err := c.tryRead(10 * time.Second)
		if err != nil {
			st := websocket.CloseStatus(err)
			if st == -1 {
				t.Fatalf("the connection ended without a close: %v", err)
			}
			return last, st
		}
		last = m
	}
}

// TestQueueBoundedInBytes: a private session whose viewer does not read is dropped
// once its queue holds more bytes than the bound, though it holds few messages;
// when the viewer reads at last it gets too-slow and status 1008, not a bare end
// of the connection.
func TestQueueBoundedInBytes(t *testing.T) {
	drops := &dropCounter{}
	s := newServer(t, serverOpt{
		opts:   Options{QueueSize: 1 << 16, QueueBytes: 64 << 10, Logger: slog.New(drops)},
		sndbuf: 8192,
	})
	c := s.dial(t, "/ws/session", dialOpt{rcvbuf: 8192})
	defer c.close()
	// The capstone's log is megabytes of JSON: far more than 64 KiB queued.
	c.send(t, hello("capstone", 1, nil))
	deadline := time.Now().Add(10 * time.Second)
	for drops.n.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the viewer was never dropped")
		}
		time.Sleep(5 * time.Millisecond)
	}
	last, st := readToTheEnd(t, c)
	if last.Type != "error" || last.Code != codeTooSlow {
		t.Fatalf("the last message was %.200s, want too-slow", last.Raw)
	}
	if st != websocket.StatusPolicyViolation {
		t.Fatalf("closed with %v, want 1008", st)
	}
}

// TestSessionsPerSocketCapped: the hello after the limit closes the socket with
// too-many-sessions and 1008.
func TestSessionsPerSocketCapped(t *testing.T) {
	s := newServer(t, serverOpt{opts: Options{SessionsPerSocket: 3}})
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	for i := range 3 {
		c.send(t, hello("job", uint64(i+1), nil))
		c.expect(t, "welcome")
		for m := c.read(t); m.Type != "end"; m = c.read(t) {
		}
	}
	c.send(t, hello("job", 9, nil))
	last, st := readToTheEnd(t, c)
	if last.Type != "error" || last.Code != codeTooMany {
		t.Fatalf("the fourth hello got %.200s, want too-many-sessions", last.Raw)
	}
	if st != websocket.StatusPolicyViolation {
		t.Fatalf("closed with %v, want 1008", st)
	}
}

// TestSocketsPerClientCapped: one client address holds at most the limit of open
// sockets; one more is refused with 429 before the upgrade, and a socket that
// closes makes room again.
func TestSocketsPerClientCapped(t *testing.T) {
	s := newServer(t, serverOpt{opts: Options{SocketsPerClient: 2}})
	a := s.dial(t, "/ws/session", dialOpt{})
	b := s.dial(t, "/ws/session", dialOpt{})
	defer b.close()
	_, resp, err := s.tryDial("/ws/session", dialOpt{})
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a third socket: %v %v, want 429", resp, err)
	}
	a.ws.Close(websocket.StatusNormalClosure, "")
	var c *client
	deadline := time.Now().Add(10 * time.Second)
	for c == nil {
		if c, resp, err = s.tryDial("/ws/session", dialOpt{}); err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("no room after a socket closed: %v %v", resp, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	defer c.close()
	c.send(t, hello("job", 1, nil))
	c.expect(t, "welcome")
}
