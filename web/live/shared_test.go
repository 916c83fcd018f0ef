package live

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// stream is what one viewer of a shared stream saw.
type viewed struct {
	welcome  msg
	snapshot msg
	batches  []msg
	last     msg // end, or the error that ended it
}

// events is everything the viewer got, in order: the snapshot's events, then the
// batches'.
func (v viewed) events() [][]byte {
	var out [][]byte
	for _, e := range v.snapshot.Events {
		out = append(out, e)
	}
	for _, b := range v.batches {
		for _, e := range b.Events {
			out = append(out, e)
		}
	}
	return out
}

// joinShared says hello on a shared stream and reads the welcome and snapshot.
func joinShared(t testing.TB, c *client) viewed {
	t.Helper()
	// The hello's scenario is ignored: the stream's is fixed.
	c.send(t, hello("job", 99, nil))
	var v viewed
	v.welcome = c.expect(t, "welcome")
	if !v.welcome.Shared {
		t.Fatalf("welcome %s", v.welcome.Raw)
	}
	v.snapshot = c.expect(t, "snapshot")
	return v
}

// follow reads the stream to its end (or its error).
func follow(t testing.TB, c *client, v *viewed) {
	t.Helper()
	for {
		m := c.read(t)
		switch m.Type {
		case "events":
			v.batches = append(v.batches, m)
		case "end", "error":
			v.last = m
			return
		default:
			t.Fatalf("unexpected %s: %.300s", m.Type, m.Raw)
		}
	}
}

// checkViewed checks that the snapshot and the batches after it are contiguous
// from 1; it returns the last seq.
func checkViewed(t testing.TB, v viewed) uint64 {
	t.Helper()
	next := uint64(1)
	for _, s := range v.snapshot.seqs(t) {
		if s != next {
			t.Fatalf("snapshot seq %d, want %d", s, next)
		}
		next++
	}
	return checkContiguous(t, next, v.batches)
}

func TestSharedTwoViewersSeeTheSameLog(t *testing.T) {
	s := newServer(t, serverOpt{opts: Options{Shared: map[string]SharedSpec{
		"class": {Scenario: "mixed", Seed: 3, Pace: time.Millisecond},
	}}})
	a := s.dial(t, "/ws/shared/class", dialOpt{})
	defer a.close()
	b := s.dial(t, "/ws/shared/class", dialOpt{})
	defer b.close()
	va, vb := joinShared(t, a), joinShared(t, b)
	if va.welcome.Scenario != "mixed" || va.welcome.Seed != 3 || va.welcome.Session != vb.welcome.Session {
		t.Fatalf("welcomes %s / %s", va.welcome.Raw, vb.welcome.Raw)
	}
	follow(t, a, &va)
	follow(t, b, &vb)
	for _, v := range []viewed{va, vb} {
		if last := checkViewed(t, v); v.last.Type != "end" || v.last.Seq != last || v.last.Error != "" {
			t.Fatalf("last %d, end %s", last, v.last.Raw)
		}
		for _, b := range v.batches {
			if len(b.Events) > sharedBatch {
				t.Fatalf("a batch of %d", len(b.Events))
			}
		}
	}
	ea, eb := va.events(), vb.events()
	if len(ea) != len(eb) || !bytes.Equal(bytes.Join(ea, nil), bytes.Join(eb, nil)) || !bytes.Equal(va.last.Raw, vb.last.Raw) {
		t.Fatalf("the viewers saw different logs (%d and %d events)", len(ea), len(eb))
	}

	// The shared log is the private run's log, byte for byte.
	p := s.dial(t, "/ws/session", dialOpt{})
	defer p.close()
	p.send(t, hello("mixed", 3, nil))
	r := p.readRun(t)
	var priv [][]byte
	for _, b := range r.batches {
		for _, e := range b.Events {
			priv = append(priv, e)
		}
	}
	if !bytes.Equal(bytes.Join(priv, nil), bytes.Join(ea, nil)) || !bytes.Equal(r.end.Raw, va.last.Raw) {
		t.Fatalf("the shared stream differs from a private run of the same scenario")
	}

	// A viewer that comes after the end gets it all: the snapshot, then end.
	c := s.dial(t, "/ws/shared/class", dialOpt{})
	defer c.close()
	vc := joinShared(t, c)
	if !vc.snapshot.Ended || len(vc.snapshot.Events) != len(ea) {
		t.Fatalf("snapshot after the end: ended %v, %d events", vc.snapshot.Ended, len(vc.snapshot.Events))
	}
	if m := c.expect(t, "end"); !bytes.Equal(m.Raw, va.last.Raw) {
		t.Fatalf("end after the snapshot: %s", m.Raw)
	}
	// Inspection works on a shared stream too, against the stream's run.
	c.send(t, map[string]any{"type": "inspect", "id": 1, "seq": 40, "line": "info registers"})
	if m := c.expect(t, "inspect"); m.Seq != 40 || !strings.Contains(m.Output, "CTRL") {
		t.Fatalf("inspect: %s", m.Raw)
	}
}

// TestSharedLateJoiner: a viewer that joins in the middle gets the log so far as a
// snapshot, then the live batches, contiguously.
func TestSharedLateJoiner(t *testing.T) {
	held := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	s := newServer(t, serverOpt{
		opts: Options{Shared: map[string]SharedSpec{"class": {Scenario: "mixed", Seed: 1}}},
		hooks: hooks{published: func(name string, from, to uint64, at time.Time) {
			if to >= 100 {
				once.Do(func() {
					close(held)
					<-release // the machine waits here: the stream is mid-run
				})
			}
		}},
	})
	a := s.dial(t, "/ws/shared/class", dialOpt{})
	defer a.close()
	va := joinShared(t, a)
	<-held
	b := s.dial(t, "/ws/shared/class", dialOpt{})
	defer b.close()
	vb := joinShared(t, b)
	close(release)
	n := len(vb.snapshot.Events)
	if n < 100 || vb.snapshot.Ended {
		t.Fatalf("late snapshot: %d events, ended %v", n, vb.snapshot.Ended)
	}
	follow(t, a, &va)
	follow(t, b, &vb)
	if len(vb.batches) == 0 || vb.batches[0].From != uint64(n)+1 {
		t.Fatalf("after a snapshot of %d the batches start at %d", n, vb.batches[0].From)
	}
	la, lb := checkViewed(t, va), checkViewed(t, vb)
	if la != lb || vb.last.Type != "end" || vb.last.Seq != lb {
		t.Fatalf("late joiner ended at %d, first viewer at %d: %s", lb, la, vb.last.Raw)
	}
	if !bytes.Equal(bytes.Join(va.events(), nil), bytes.Join(vb.events(), nil)) {
		t.Fatalf("the late joiner's log differs")
	}
	// A second hello on the same socket resynchronises: welcome, snapshot of all.
	b.send(t, hello("", 0, nil))
	b.expect(t, "welcome")
	if m := b.expect(t, "snapshot"); !m.Ended || uint64(len(m.Events)) != lb {
		t.Fatalf("resync snapshot: ended %v, %d events", m.Ended, len(m.Events))
	}
	b.expect(t, "end")
}

// TestSharedSlowViewerDropped: a viewer that never reads is dropped with too-slow;
// a viewer that keeps up sees the whole run, and the machine is never held back.
func TestSharedSlowViewerDropped(t *testing.T) {
	const pace = 10 * time.Millisecond
	var mu sync.Mutex
	var first, last time.Time
	s := newServer(t, serverOpt{
		opts: Options{QueueSize: 32, Shared: map[string]SharedSpec{"class": {Scenario: "bypass", Seed: 1, Pace: pace}}},
		hooks: hooks{published: func(name string, from, to uint64, at time.Time) {
			mu.Lock()
			if first.IsZero() {
				first = at
			}
			last = at
			mu.Unlock()
		}},
		sndbuf: 8192, // a non-reading peer stops taking data after a few KiB
	})
	slow := s.dial(t, "/ws/shared/class", dialOpt{rcvbuf: 8192})
	defer slow.close()
	slow.send(t, hello("", 0, nil))
	fast := s.dial(t, "/ws/shared/class", dialOpt{})
	defer fast.close()
	vf := joinShared(t, fast)
	follow(t, fast, &vf)
	lastSeq := checkViewed(t, vf)
	if vf.last.Type != "end" || vf.last.Seq != lastSeq {
		t.Fatalf("the fast viewer ended with %s", vf.last.Raw)
	}
	mu.Lock()
	took, batches := last.Sub(first), len(vf.batches)
	mu.Unlock()
	// The machine kept its pace with a viewer that never reads: the run reached
	// its end while the slow viewer still held almost nothing (checked below).
	t.Logf("%d batches took %v (pace %v)", batches, took, pace)

	// Now the slow viewer reads: what it was sent, contiguous, then too-slow and
	// a policy close.
	var vs viewed
	vs.welcome = slow.expect(t, "welcome")
	vs.snapshot = slow.expect(t, "snapshot")
	follow(t, slow, &vs)
	if vs.last.Type != "error" || vs.last.Code != "too-slow" {
		t.Fatalf("the slow viewer ended with %s", vs.last.Raw)
	}
	got := checkViewed(t, vs)
	if got >= lastSeq {
		t.Fatalf("the slow viewer got all %d events", got)
	}
	if st := slow.closeStatus(t); st != websocket.StatusPolicyViolation {
		t.Fatalf("slow viewer closed with %v", st)
	}
	t.Logf("%d batches in %v; the slow viewer was dropped after event %d of %d", batches, took, got, lastSeq)
}

func TestSharedUnknownIs404(t *testing.T) {
	s := newServer(t, serverOpt{opts: Options{Shared: map[string]SharedSpec{
		"bad":     {Scenario: "nosuch"},
		"badopts": {Scenario: "driver", Options: map[string]string{"cpu": "sparc"}},
	}}})
	for _, name := range []string{"nosuch", "bad", "badopts"} {
		resp, err := http.Get(s.srv.URL + "/ws/shared/" + name)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s: %s", name, resp.Status)
		}
		if _, resp, err := s.tryDial("/ws/shared/"+name, dialOpt{}); err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("dial %s: %v %v", name, err, resp)
		}
	}
}

// TestCloseEndsEverything: Close ends sessions mid-run and streams mid-pace,
// closes every socket with going-away, and leaves no goroutine (TestMain checks).
func TestCloseEndsEverything(t *testing.T) {
	s := newServer(t, serverOpt{opts: Options{Shared: map[string]SharedSpec{
		"slowclass": {Scenario: "mixed", Seed: 1, Pace: time.Hour},
	}}})
	var clients []*client
	for range 3 {
		c := s.dial(t, "/ws/shared/slowclass", dialOpt{})
		joinShared(t, c)
		clients = append(clients, c)
	}
	c := s.dial(t, "/ws/session", dialOpt{})
	c.send(t, hello("job", 1, nil))
	c.readRun(t)
	c.send(t, map[string]any{"type": "inspect", "id": 1, "seq": 10, "line": "info rings"})
	c.expect(t, "inspect")
	clients = append(clients, c)
	busy := s.dial(t, "/ws/session", dialOpt{}) // mid-run when Close comes
	busy.send(t, hello("irq-race", 1, nil))
	clients = append(clients, busy)

	// The clients read, as browsers do, while the hub closes.
	statuses := make([]chan websocket.StatusCode, len(clients))
	for i, c := range clients {
		statuses[i] = make(chan websocket.StatusCode, 1)
		go func() { statuses[i] <- c.closeStatus(t) }()
	}
	start := time.Now()
	if err := s.hub.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close took %v", time.Since(start))
	for i, c := range clients {
		if st := <-statuses[i]; st != websocket.StatusGoingAway {
			t.Fatalf("client %d: close status %v", i, st)
		}
		c.close()
	}
	if _, resp, err := s.tryDial("/ws/session", dialOpt{}); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("after Close: %v %v", err, resp)
	}
	if err := s.hub.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
