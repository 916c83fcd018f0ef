// Package live is the server side of the book's live widgets: the websocket
// endpoints of `saccbook serve` that run machines and stream their event logs to
// browsers, as docs/PROTOCOL.md describes.
//
// A private session (/ws/session) runs one scenario per hello on a fresh machine and
// sends the whole event log in batches, then the scenario's narrative; it answers
// inspect requests (monitor commands at any event position) by deterministic
// re-execution on a runner of its own. A shared stream (/ws/shared/{name}) runs one
// machine for many viewers: each viewer gets a snapshot of the log so far, then the
// live batches.
//
// Machines never wait for sockets. Everything a viewer is sent goes through its own
// bounded queue, drained by its own writer goroutine; a viewer whose queue is full is
// dropped with "too-slow" and may reconnect.
package live

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/saccbook/saccbook/sacc/hunt"
	"github.com/saccbook/saccbook/sacc/scenario"
)

// Options configures a Hub.
type Options struct {
	// AllowedOrigins are host patterns (path.Match syntax, as in
	// websocket.AcceptOptions.OriginPatterns), e.g. "127.0.0.1:*", "localhost:*"
	// (escape brackets: `\[::1\]:*`). A request's Host must match one of them
	// (anything else is refused with 403: a DNS-rebinding page sends its own
	// origin, on a host name of its own), and its Origin, when it has one, must be
	// its own host or match one of them (the websocket library's check, 403 too).
	// Empty means loopback hosts only, and same-origin pages only.
	AllowedOrigins []string
	Logger         *slog.Logger // nil: discard
	// QueueSize is each viewer's outgoing queue, in messages; 0 means 256.
	QueueSize int
	// QueueBytes bounds the same queue in bytes; 0 means 8 MiB. A viewer over
	// either bound is dropped with too-slow.
	QueueBytes int
	// Compression is how the sockets compress (permessage-deflate, when the
	// browser offers it: all but Safari do); the zero value compresses each
	// message on its own.
	Compression Compression
	// SocketsPerClient is how many sockets one client address may hold open at
	// once; 0 means 64. One more is refused with 429 before the upgrade.
	SocketsPerClient int
	// SessionsPerSocket is how many hellos one socket may send; 0 means 256. The
	// one after them closes the socket with 1008 and too-many-sessions.
	SessionsPerSocket int
	// Shared are the classroom streams, by name (/ws/shared/{name}). A spec that
	// names an unknown scenario or a bad option is logged and left out.
	Shared map[string]SharedSpec
	// Hunts gives the learner's variant of bug hunt n, for a hello that asks
	// for a hunt; nil: the server has no hunts.
	Hunts func(n int) (hunt.Variant, error)
	// Recorded, if set, finds the recorded run of an exercise for a hello with
	// run "recorded" (the learner's own run, as exercises/.runs/ID.json holds
	// it): the server replays it and never runs the learner's code.
	Recorded func(exercise string) (*Recording, error)
}

// Recording is a learner's recorded exercise run.
type Recording struct {
	Events  []json.RawMessage // the protocol's event objects, in order
	FailSeq uint64            // the failing event, 0 for a run that passed
	Error   string            // the failure message, "" for a run that passed
	Log     []string          // what the run said: its tests and how each ended
}

// SharedSpec is one classroom stream: one machine, many viewers.
type SharedSpec struct {
	Scenario string
	Seed     uint64
	Options  map[string]string
	Profile  string // "" for the default
	// Pace is the wall time between event batches (of up to 16 events), so that
	// many viewers watch the run unfold; 0 means as fast as possible.
	Pace time.Duration
}

// Tuning. Timeouts bound what a dead or stalled peer can hold; none of them is
// ever waited out on a machine's goroutine.
const (
	defaultQueue      = 256
	defaultQueueBytes = 8 << 20         // a whole capstone log, many times over, compressed or not
	defaultPerClient  = 64              // a reader with many tabs of widgets open, and pages still closing theirs
	defaultPerSocket  = 256             // hellos: every option flip and seed is one
	readLimit         = 64 << 10        // client messages (PROTOCOL.md: larger closes with 1009)
	writeTimeout      = 5 * time.Second // one message to one viewer
	closeGrace        = time.Second     // close handshake, and Hub.Close before it cuts
)

// Compression chooses how a hub's sockets compress what they send.
type Compression int

const (
	// CompressEach compresses each message of 512 bytes or more on its own, with
	// a compressor from a pool: a batch of events is long and repeats itself, so
	// this takes the capstone from about 164 bytes per event on the wire to about
	// 24, and an idle viewer holds no compressor (TestWireBytesPerEvent).
	CompressEach Compression = iota
	// CompressWindow keeps the compression window across messages: a few per cent
	// smaller on a private session, for a 1.2 MB compressor held by every socket.
	CompressWindow
	// CompressOff sends everything as it is.
	CompressOff
)

func (c Compression) mode() websocket.CompressionMode {
	switch c {
	case CompressWindow:
		return websocket.CompressionContextTakeover
	case CompressOff:
		return websocket.CompressionDisabled
	}
	return websocket.CompressionNoContextTakeover
}

// defaultHosts are the hosts allowed when Options.AllowedOrigins is empty.
var defaultHosts = []string{"127.0.0.1:*", "localhost:*", `\[::1\]:*`}

// hooks are test-only observation points; all nil in production.
type hooks struct {
	// published is called on a shared stream's machine goroutine after each batch
	// has been appended to the log and handed to the viewers; at is when the batch
	// was complete, before it was appended.
	published func(stream string, from, to uint64, at time.Time)
}

// Hub serves private sessions and shared streams. Its methods are safe for
// concurrent use.
type Hub struct {
	log     *slog.Logger
	hosts   []string // patterns for the Host header
	origins []string // patterns for the Origin header, beyond same-origin
	queue   int
	// The limits of Options, with their defaults filled in.
	queueBytes  int64
	compression websocket.CompressionMode
	perClient   int
	perSocket   int
	hooks       hooks
	streams     map[string]*stream // fixed at New
	recorded    func(string) (*Recording, error)
	hunts       func(int) (hunt.Variant, error)

	ctx    context.Context // cancelled by Close: runs and streams stop
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	conns  map[*conn]struct{}
	client map[string]int // open sockets by client address
	wg     sync.WaitGroup // every handler and goroutine the hub started
}

// New returns a hub. Shared streams start when their first viewer arrives.
func New(opts Options) *Hub { return newHub(opts, hooks{}) }

func newHub(opts Options, hk hooks) *Hub {
	h := &Hub{
		log:         opts.Logger,
		hosts:       opts.AllowedOrigins,
		origins:     opts.AllowedOrigins,
		queue:       opts.QueueSize,
		queueBytes:  int64(opts.QueueBytes),
		compression: opts.Compression.mode(),
		perClient:   opts.SocketsPerClient,
		perSocket:   opts.SessionsPerSocket,
		client:      map[string]int{},
		hooks:       hk,
		recorded:    opts.Recorded,
		hunts:       opts.Hunts,
		streams:     map[string]*stream{},
		conns:       map[*conn]struct{}{},
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if len(h.hosts) == 0 {
		h.hosts = defaultHosts
	}
	if h.queue <= 0 {
		h.queue = defaultQueue
	}
	if h.queueBytes <= 0 {
		h.queueBytes = defaultQueueBytes
	}
	if h.perClient <= 0 {
		h.perClient = defaultPerClient
	}
	if h.perSocket <= 0 {
		h.perSocket = defaultPerSocket
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	for name, spec := range opts.Shared {
		cfg, err := newRunConfig(spec.Scenario, spec.Seed, spec.Options, nil, spec.Profile)
		if err != nil {
			h.log.Error("live: shared stream left out", "stream", name, "err", err)
			continue
		}
		h.streams[name] = newStream(h, name, cfg, spec.Pace)
	}
	return h
}

// ServeSession serves /ws/session: a private session.
func (h *Hub) ServeSession(w http.ResponseWriter, r *http.Request) { h.serve(w, r, nil) }

// ServeShared serves /ws/shared/{name}. An unknown name is answered 404 before
// any upgrade.
func (h *Hub) ServeShared(w http.ResponseWriter, r *http.Request, name string) {
	st, ok := h.streams[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h.serve(w, r, st)
}

// Close ends every session and stream and waits for their goroutines. Viewers are
// sent a close (1001, going away); a peer that does not answer it within a second
// is cut off.
func (h *Hub) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.wg.Wait()
		return nil
	}
	h.closed = true
	conns := make([]*conn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()

	h.cancel()
	for _, c := range conns {
		c.shutdown(websocket.StatusGoingAway, "server closing", nil)
	}
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		for _, c := range conns {
			c.kill()
		}
		<-done
	}
	return nil
}

// enter admits a handler, unless the hub is closed.
func (h *Hub) enter() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.wg.Add(1)
	return true
}

func (h *Hub) register(c *conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.conns[c] = struct{}{}
	return true
}

func (h *Hub) unregister(c *conn) {
	h.mu.Lock()
	delete(h.conns, c)
	h.mu.Unlock()
}

// goTracked runs fn on a goroutine that Close waits for.
func (h *Hub) goTracked(fn func()) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		fn()
	}()
}

// hostAllowed checks the request's Host against the allowed patterns (the
// websocket library checks the Origin; the Host check keeps DNS-rebinding pages,
// whose Origin is their own host, out).
func (h *Hub) hostAllowed(host string) bool {
	host = strings.ToLower(host)
	for _, p := range h.hosts {
		if ok, err := path.Match(strings.ToLower(p), host); err == nil && ok {
			return true
		}
	}
	return false
}

// serve upgrades one request and runs its socket until it ends.
func (h *Hub) serve(w http.ResponseWriter, r *http.Request, st *stream) {
	if !h.enter() {
		http.Error(w, "server closing", http.StatusServiceUnavailable)
		return
	}
	defer h.wg.Done()
	if !h.hostAllowed(r.Host) {
		h.log.Warn("live: host refused", "host", r.Host, "remote", r.RemoteAddr)
		http.Error(w, "host not allowed", http.StatusForbidden)
		return
	}
	client := clientAddr(r)
	if !h.admit(client) {
		h.log.Warn("live: too many sockets from one client", "remote", r.RemoteAddr, "limit", h.perClient)
		http.Error(w, "too many live sockets from this client", http.StatusTooManyRequests)
		return
	}
	defer h.leave(client)
	hw := &hijackRecorder{ResponseWriter: w}
	ws, err := websocket.Accept(hw, r, &websocket.AcceptOptions{
		OriginPatterns:  h.origins,
		CompressionMode: h.compression, // Options.Compression

	})
	if err != nil {
		// Accept has answered (403 for a foreign Origin).
		h.log.Warn("live: upgrade refused", "err", err, "origin", r.Header.Get("Origin"), "remote", r.RemoteAddr)
		return
	}
	ws.SetReadLimit(readLimit)
	c := newConn(h, ws, hw.conn)
	if !h.register(c) {
		// Closed meanwhile: say so, as Close does to the others.
		c.shutdown(websocket.StatusGoingAway, "server closing", nil)
		c.writeLoop()
		return
	}
	defer h.unregister(c)
	h.goTracked(c.writeLoop)
	s := &socket{h: h, c: c, stream: st}
	s.readLoop()
	s.finish()
}

// clientAddr is who a request comes from, for the per-client limit: the remote
// host without its port.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// admit counts one more socket for client, unless it has its fill.
func (h *Hub) admit(client string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client[client] >= h.perClient {
		return false
	}
	h.client[client]++
	return true
}

// leave counts a client's socket gone.
func (h *Hub) leave(client string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client[client]--; h.client[client] <= 0 {
		delete(h.client, client)
	}
}

// findScenario looks a scenario up, including the test-only ones.
func findScenario(name string) (scenario.Scenario, bool) {
	if s, ok := testScenarios[name]; ok {
		return s, true
	}
	return scenario.Find(name)
}

// testScenarios are extra scenarios that tests inject (from an init function, so
// there is no race); empty in production.
var testScenarios = map[string]scenario.Scenario{}
