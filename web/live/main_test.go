package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/scenario"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The test-only scenarios.
func init() {
	testScenarios["test-panic"] = scenario.Scenario{
		Name: "test-panic", Summary: "a few events, then a panic",
		Run: func(m *machine.Machine, env *scenario.Env) error {
			fmt.Fprintln(env.Log, "about to panic")
			m.Read(0xb0018000, 4) // ECAM: a configuration read
			m.Read(0xb0018000, 4)
			panic("deliberate test panic")
		},
	}
	testScenarios["test-segfault"] = scenario.Scenario{
		Name: "test-segfault", Summary: "a process touches an address it has not mapped",
		Run: func(m *machine.Machine, env *scenario.Env) error {
			h, err := host.BootOn(m, host.Config{NoDriver: true})
			if err != nil {
				return err
			}
			h.K.NewProcess("app").Store32(0x1234, 1)
			return errors.New("the store returned")
		},
	}
}

// server is a hub behind a real HTTP server, mounted as saccbook serve mounts it.
type server struct {
	hub *Hub
	srv *httptest.Server
	url string // ws://host:port
}

type serverOpt struct {
	opts  Options
	hooks hooks
	// sndbuf, when not zero, is the kernel send buffer of the server's side of
	// connections dialled as slow (dialOpt.rcvbuf).
	sndbuf int
	// wire, when set, counts every byte the server writes on its connections.
	wire *atomic.Int64
}

func newServer(t testing.TB, so serverOpt) *server {
	t.Helper()
	h := newHub(so.opts, so.hooks)
	mux := http.NewServeMux()
	mux.HandleFunc("/ws/session", h.ServeSession)
	mux.HandleFunc("/ws/shared/{name}", func(w http.ResponseWriter, r *http.Request) {
		h.ServeShared(w, r, r.PathValue("name"))
	})
	srv := httptest.NewUnstartedServer(mux)
	if so.sndbuf > 0 {
		srv.Listener = bufListener{srv.Listener, so.sndbuf}
	}
	if so.wire != nil {
		srv.Listener = countingListener{srv.Listener, so.wire}
	}
	srv.Start()
	s := &server{hub: h, srv: srv, url: "ws" + strings.TrimPrefix(srv.URL, "http")}
	t.Cleanup(s.close)
	return s
}

// close closes the hub, then the HTTP server; it may be called again.
func (s *server) close() {
	s.hub.Close()
	s.srv.Close()
}

// slowPeers are the client addresses of connections dialled as slow (with a small
// receive buffer); the server gives their side a small send buffer too, so that a
// client that does not read stops taking data after a few KiB.
var slowPeers sync.Map // local address of the client → true

type bufListener struct {
	net.Listener
	sndbuf int
}

func (l bufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		return &bufConn{TCPConn: tc, sndbuf: l.sndbuf}, nil
	}
	return c, err
}

// bufConn sets its send buffer on its first write (the HTTP response, written
// after the client has registered itself).
type bufConn struct {
	*net.TCPConn
	sndbuf int
	once   sync.Once
}

func (c *bufConn) Write(b []byte) (int, error) {
	c.once.Do(func() {
		if _, slow := slowPeers.Load(c.RemoteAddr().String()); slow {
			c.SetWriteBuffer(c.sndbuf)
		}
	})
	return c.TCPConn.Write(b)
}

// countingListener counts what the server writes on the connections it accepts:
// the bytes on the wire, after compression and framing.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// client is a test viewer.
type client struct {
	ws *websocket.Conn
}

type dialOpt struct {
	origin   string
	compress websocket.CompressionMode // what the client offers
	rcvbuf   int                       // kernel receive buffer, when not zero
}

func (s *server) dial(t testing.TB, path string, do dialOpt) *client {
	t.Helper()
	c, resp, err := s.tryDial(path, do)
	if err != nil {
		t.Fatalf("dial %s: %v (%v)", path, err, resp)
	}
	return c
}

func (s *server) tryDial(path string, do dialOpt) (*client, *http.Response, error) {
	opts := &websocket.DialOptions{HTTPHeader: http.Header{}, CompressionMode: do.compress}
	if do.origin != "" {
		opts.HTTPHeader.Set("Origin", do.origin)
	}
	if do.rcvbuf > 0 {
		opts.HTTPClient = &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				var d net.Dialer
				c, err := d.DialContext(ctx, network, addr)
				if tc, ok := c.(*net.TCPConn); ok {
					tc.SetReadBuffer(do.rcvbuf)
					slowPeers.Store(tc.LocalAddr().String(), true)
				}
				return c, err
			},
		}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, s.url+path, opts)
	if err != nil {
		return nil, resp, err
	}
	ws.SetReadLimit(-1)
	return &client{ws: ws}, resp, nil
}

func (c *client) close() { c.ws.CloseNow() }

func (c *client) sendRaw(t testing.TB, s string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, []byte(s)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func (c *client) send(t testing.TB, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	c.sendRaw(t, string(b))
}

// msg is any server message, with the raw bytes kept.
type msg struct {
	Raw      []byte            `json:"-"`
	Type     string            `json:"type"`
	V        int               `json:"v"`
	Session  string            `json:"session"`
	Scenario string            `json:"scenario"`
	Seed     uint64            `json:"seed"`
	Options  map[string]string `json:"options"`
	Profile  string            `json:"profile"`
	Shared   bool              `json:"shared"`
	Quirks   []string          `json:"quirks"`
	Compare  bool              `json:"compare"`
	Run      string            `json:"run"`
	Event    json.RawMessage   `json:"event"`
	Baseline json.RawMessage   `json:"baseline"`
	Kinds    map[string]struct {
		Side string   `json:"side"`
		Args []string `json:"args"`
	} `json:"kinds"`
	From    uint64            `json:"from"`
	Events  []json.RawMessage `json:"events"`
	Ended   bool              `json:"ended"`
	Seq     uint64            `json:"seq"`
	T       uint64            `json:"t"`
	Error   string            `json:"error"`
	Log     []string          `json:"log"`
	ID      json.RawMessage   `json:"id"`
	Output  string            `json:"output"`
	Code    string            `json:"code"`
	Message string            `json:"message"`
}

// event is one decoded event.
type event struct {
	Seq  uint64            `json:"seq"`
	T    uint64            `json:"t"`
	Kind string            `json:"kind"`
	Side string            `json:"side"`
	Args map[string]uint64 `json:"args"`
	Text string            `json:"text"`
	Src  string            `json:"src"`
}

func (m msg) seqs(t testing.TB) []uint64 {
	t.Helper()
	out := make([]uint64, len(m.Events))
	for i, raw := range m.Events {
		var ev event
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatalf("event %s: %v", raw, err)
		}
		out[i] = ev.Seq
	}
	return out
}

// read returns the next message, or fails the test.
func (c *client) read(t testing.TB) msg {
	t.Helper()
	m, err := c.tryRead(10 * time.Second)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return m
}

func (c *client) tryRead(timeout time.Duration) (msg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	typ, b, err := c.ws.Read(ctx)
	if err != nil {
		return msg{}, err
	}
	if typ != websocket.MessageText {
		return msg{}, fmt.Errorf("binary message")
	}
	var m msg
	if err := json.Unmarshal(b, &m); err != nil {
		return msg{}, fmt.Errorf("bad JSON %q: %v", b, err)
	}
	if m.V != 1 {
		return msg{}, fmt.Errorf("message without v:1: %s", b)
	}
	m.Raw = b
	return m, nil
}

// expect reads the next message and checks its type.
func (c *client) expect(t testing.TB, typ string) msg {
	t.Helper()
	m := c.read(t)
	if m.Type != typ {
		t.Fatalf("got %s, want %s: %.300s", m.Type, typ, m.Raw)
	}
	return m
}

// closeStatus reads until the connection ends and returns its close status.
func (c *client) closeStatus(t testing.TB) websocket.StatusCode {
	t.Helper()
	for {
		_, err := c.tryRead(10 * time.Second)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the connection stayed open")
			}
			st := websocket.CloseStatus(err)
			if st == -1 {
				t.Logf("connection ended with %v", err)
			}
			return st
		}
	}
}

// run is a whole private run as a client sees it.
type run struct {
	welcome msg
	batches []msg
	end     msg
}

// readRun reads a welcome, the events batches and the end.
func (c *client) readRun(t testing.TB) run {
	t.Helper()
	var r run
	r.welcome = c.expect(t, "welcome")
	for {
		m := c.read(t)
		switch m.Type {
		case "events":
			r.batches = append(r.batches, m)
		case "end":
			r.end = m
			return r
		default:
			t.Fatalf("unexpected %s during a run: %.300s", m.Type, m.Raw)
		}
	}
}

// checkContiguous checks that batches hold events from..to, in order, with every
// batch's from equal to its first seq; it returns the last seq.
func checkContiguous(t testing.TB, from uint64, batches []msg) uint64 {
	t.Helper()
	next := from
	for _, b := range batches {
		if b.From != next {
			t.Fatalf("batch from %d, want %d", b.From, next)
		}
		for _, s := range b.seqs(t) {
			if s != next {
				t.Fatalf("event seq %d, want %d", s, next)
			}
			next++
		}
	}
	return next - 1
}

func hello(scenario string, seed uint64, opts map[string]string) map[string]any {
	m := map[string]any{"type": "hello", "v": 1, "scenario": scenario, "seed": seed}
	if opts != nil {
		m["options"] = opts
	}
	return m
}
