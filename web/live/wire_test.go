package live

import (
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"
)

// TestWireBytesPerEvent measures what a private session of the capstone costs on
// the wire — every byte the server writes, framing and handshake included — with
// each compression mode, and holds the one serve uses to 40 bytes per event.
func TestWireBytesPerEvent(t *testing.T) {
	modes := []struct {
		name string
		c    Compression
		mode websocket.CompressionMode // what the client offers
	}{
		{"uncompressed", CompressOff, websocket.CompressionDisabled},
		{"deflate, each message on its own", CompressEach, websocket.CompressionNoContextTakeover},
		{"deflate, window kept", CompressWindow, websocket.CompressionContextTakeover},
	}
	perEvent := map[Compression]float64{}
	for _, md := range modes {
		var wire atomic.Int64
		s := newServer(t, serverOpt{opts: Options{Compression: md.c}, wire: &wire})
		c := s.dial(t, "/ws/session", dialOpt{compress: md.mode})
		c.send(t, hello("capstone", 1, nil))
		r := c.readRun(t)
		c.close()
		s.close()
		events := 0
		for _, b := range r.batches {
			events += len(b.seqs(t))
		}
		if events == 0 {
			t.Fatalf("%s: no events", md.name)
		}
		perEvent[md.c] = float64(wire.Load()) / float64(events)
		t.Logf("%s: %d events, %d bytes on the wire, %.1f bytes per event", md.name, events, wire.Load(), perEvent[md.c])
	}
	if got := perEvent[CompressEach]; got > 40 {
		t.Errorf("%.1f bytes per event with the default mode; the goal is 40", got)
	}
	if perEvent[CompressOff] <= perEvent[CompressEach] {
		t.Errorf("compression saved nothing")
	}
}
