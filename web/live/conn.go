package live

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// conn is one viewer's socket: a queue of outgoing messages, bounded in messages
// and in bytes, and the writer goroutine that drains it. Anyone may send (the
// reader, a run, a stream, an inspector); sending never blocks.
type conn struct {
	h  *Hub
	ws *websocket.Conn
	// ctx is the connection's life: cancelling it drops the connection at once
	// (the websocket library closes a connection whose read or write context ends).
	ctx    context.Context
	cancel context.CancelFunc
	raw    net.Conn // the hijacked connection, for kill
	q      chan []byte
	queued atomic.Int64  // bytes in q, not yet taken by the writer
	done   chan struct{} // the writer has returned

	stopOnce sync.Once
	stop     chan struct{} // closed by shutdown: the writer says goodbye and closes
	code     websocket.StatusCode
	reason   string
	final    []byte // sent before the close frame, or nil
}

func newConn(h *Hub, ws *websocket.Conn, raw net.Conn) *conn {
	c := &conn{
		h:    h,
		ws:   ws,
		raw:  raw,
		q:    make(chan []byte, h.queue),
		done: make(chan struct{}),
		stop: make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

// send queues a message. A full queue drops the viewer with too-slow; a viewer
// that is closing takes nothing more. It reports whether the message was queued.
func (c *conn) send(msg []byte) bool {
	select {
	case <-c.stop:
		return false
	default:
	}
	// The byte bound counts what is queued, not what the socket already took; a
	// single message larger than the bound still goes when the queue is empty.
	n := int64(len(msg))
	if q := c.queued.Add(n); q > n && q > c.h.queueBytes {
		c.queued.Add(-n)
		c.tooSlow("bytes", q-n)
		return false
	}
	select {
	case c.q <- msg:
		return true
	default:
		c.queued.Add(-n)
		c.tooSlow("messages", int64(cap(c.q)))
		return false
	}
}

// tooSlow drops the viewer: what is queued is thrown away, and the writer sends
// too-slow and closes with 1008 once the socket takes them.
func (c *conn) tooSlow(bound string, queued int64) {
	c.h.log.Info("live: viewer too slow, dropped", "bound", bound, "queued", queued)
	c.shutdown(websocket.StatusPolicyViolation, codeTooSlow,
		errorMessage(codeTooSlow, "the viewer fell behind: reconnect to resynchronise", nil))
}

// stopping reports whether the connection is closing.
func (c *conn) stopping() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// shutdown asks the writer to send final (if any) and close with code. Only the
// first call counts. It never blocks.
func (c *conn) shutdown(code websocket.StatusCode, reason string, final []byte) {
	c.stopOnce.Do(func() {
		c.code, c.reason, c.final = code, reason, final
		close(c.stop)
	})
}

// writeLoop is the writer goroutine: the only one that writes to the socket.
func (c *conn) writeLoop() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			c.goodbye()
			return
		case <-c.ctx.Done():
			return
		case msg := <-c.q:
			c.queued.Add(-int64(len(msg)))
			if c.stopping() {
				// Dropped meanwhile: the queue is not worth sending; the goodbye is.
				continue
			}
			if err := c.write(msg, writeTimeout); err != nil {
				c.kill()
				return
			}
		}
	}
}

func (c *conn) write(msg []byte, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, msg)
}

// goodbye sends the final message and closes with the handshake; a peer that does
// not answer within closeGrace is cut off.
func (c *conn) goodbye() {
	defer c.kill()
	if c.final != nil {
		// A viewer dropped for being slow has a full socket: the last message waits
		// as long as any other would, so that a viewer that still reads gets it.
		if err := c.write(c.final, writeTimeout); err != nil {
			return
		}
	}
	t := time.AfterFunc(closeGrace, c.kill)
	defer t.Stop()
	c.ws.Close(c.code, c.reason)
}

// kill drops the connection at once: whatever the websocket library is waiting
// for (a write to a full socket, a close handshake the peer never answers) fails.
func (c *conn) kill() {
	c.cancel()
	if c.raw != nil {
		c.raw.Close()
	}
}

// hijackRecorder keeps the connection that the websocket library hijacks, so that
// kill can close it under the library's feet.
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
}

func (w *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	w.conn = c
	return c, brw, err
}

func (w *hijackRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
