package classroom

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/saccbook/saccbook/sacc/scenario"
)

// The broadcast is the instructor's widget as a position: which run
// (scenario, seed, options, quirks) and where in it (an event position, and
// whether it plays). Every following student's widget asks the server for the
// same run on its own socket — a run is the same for the same settings, byte
// for byte — and moves to the instructor's position whenever it changes. So
// what crosses the network per step is one small message, not the run's
// events: the live hub's shared streams send a machine's log to many viewers,
// the broadcast sends a place in a log every viewer already has.
//
// The instructor's page leads (/ws/class/lead); students follow
// (/ws/class/follow). A follower's outgoing queue holds one message, the
// latest: a follower that falls behind skips positions, never the last one.

// State is the instructor's widget, as the lead page sends it.
type State struct {
	Scenario string            `json:"scenario"`
	Seed     uint64            `json:"seed"`
	Options  map[string]string `json:"options"`
	Quirks   []string          `json:"quirks"`
	Seq      uint64            `json:"seq"`
	Playing  bool              `json:"playing"`
}

// castMsg is what followers receive: the state, numbered, with the server's
// wall time in milliseconds when it was sent (for measuring, not for
// playing).
type castMsg struct {
	Type string `json:"type"` // "broadcast"
	V    int    `json:"v"`
	N    uint64 `json:"n"`
	State
	At int64 `json:"at"`
}

const (
	maxLeadMessage = 8 << 10
	castWrite      = 5 * time.Second
)

type broadcast struct {
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	n         uint64
	latest    []byte // the last message, for a follower who arrives
	followers map[*follower]struct{}
	closed    bool
	// sent, if set, is told each message's number as it is handed to the
	// followers (the load test's clock).
	sent func(n uint64, at time.Time)
}

type follower struct {
	next chan []byte // capacity 1: the latest message not yet written
}

// offer replaces whatever the follower has not written yet with msg; it
// never waits.
func (f *follower) offer(msg []byte) {
	for {
		select {
		case f.next <- msg:
			return
		default:
		}
		select {
		case <-f.next:
		default:
		}
	}
}

func newBroadcast(log *slog.Logger) *broadcast {
	b := &broadcast{log: log, followers: map[*follower]struct{}{}}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	return b
}

// publish numbers a state and hands it to every follower.
func (b *broadcast) publish(st State) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	now := time.Now()
	msg, _ := json.Marshal(castMsg{Type: "broadcast", V: 1, N: b.n, State: st, At: now.UnixMilli()})
	b.latest = msg
	for f := range b.followers {
		f.offer(msg)
	}
	if b.sent != nil {
		b.sent(b.n, now)
	}
}

// followerCount is how many are following now.
func (b *broadcast) followerCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.followers)
}

func (b *broadcast) enter() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.wg.Add(1)
	return true
}

func (b *broadcast) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}

func accept(w http.ResponseWriter, r *http.Request, origins []string) (*websocket.Conn, error) {
	return websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: origins})
}

// serveLead reads the instructor's states and publishes each.
func (b *broadcast) serveLead(w http.ResponseWriter, r *http.Request, origins []string) {
	if !b.enter() {
		http.Error(w, "server closing", http.StatusServiceUnavailable)
		return
	}
	defer b.wg.Done()
	ws, err := accept(w, r, origins)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	ws.SetReadLimit(maxLeadMessage)
	for {
		_, data, err := ws.Read(b.ctx)
		if err != nil {
			if b.ctx.Err() != nil {
				ws.Close(websocket.StatusGoingAway, "server closing")
			}
			return
		}
		var st State
		if err := json.Unmarshal(data, &st); err != nil {
			ws.Close(websocket.StatusUnsupportedData, "a state is a JSON object")
			return
		}
		if err := st.check(); err != nil {
			msg, _ := json.Marshal(map[string]any{"type": "error", "v": 1, "code": "bad-request", "message": err.Error()})
			_ = ws.Write(b.ctx, websocket.MessageText, msg)
			continue
		}
		b.publish(st)
	}
}

func (st *State) check() error {
	if _, ok := scenario.Find(st.Scenario); !ok {
		return fmt.Errorf("state: unknown scenario %q", st.Scenario)
	}
	if len(st.Options) > 16 || len(st.Quirks) > 16 {
		return fmt.Errorf("state: too many options or quirks")
	}
	if st.Options == nil {
		st.Options = map[string]string{}
	}
	if st.Quirks == nil {
		st.Quirks = []string{}
	}
	return nil
}

// serveFollow sends a follower the latest state, then every new one.
func (b *broadcast) serveFollow(w http.ResponseWriter, r *http.Request, origins []string) {
	if !b.enter() {
		http.Error(w, "server closing", http.StatusServiceUnavailable)
		return
	}
	defer b.wg.Done()
	ws, err := accept(w, r, origins)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	// A follower says nothing: anything it sends closes it, and reading
	// answers the pings and the close.
	ctx := ws.CloseRead(b.ctx)
	f := &follower{next: make(chan []byte, 1)}
	b.mu.Lock()
	if b.latest != nil {
		f.offer(b.latest)
	}
	b.followers[f] = struct{}{}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.followers, f)
		b.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			if b.ctx.Err() != nil {
				ws.Close(websocket.StatusGoingAway, "server closing")
			}
			return
		case msg := <-f.next:
			wctx, cancel := context.WithTimeout(ctx, castWrite)
			err := ws.Write(wctx, websocket.MessageText, msg)
			cancel()
			if err != nil {
				return
			}
		}
	}
}

// ParseCast reads a follower's message (for clients written in Go: the load
// test).
func ParseCast(data []byte) (n uint64, st State, err error) {
	var m castMsg
	if err := json.Unmarshal(data, &m); err != nil {
		return 0, State{}, err
	}
	if m.Type != "broadcast" {
		return 0, State{}, fmt.Errorf("not a broadcast: %s", strconv.Quote(m.Type))
	}
	return m.N, m.State, nil
}
