// Package sim is the simulation core under the machine: a virtual clock in
// nanoseconds, an event queue ordered by (time, sequence number), and a seeded random
// number generator. Nothing here reads the wall clock, so a run is a function of its
// configuration and seed alone.
package sim

import "math/rand/v2"

// Time is virtual time in nanoseconds since power-on.
type Time uint64

// Handler receives the events it scheduled. Op and the arguments are the handler's
// own; the queue never looks inside them.
type Handler interface {
	HandleEvent(ev Event)
}

// Event is one scheduled action.
type Event struct {
	At      Time
	Seq     uint64 // scheduling order; breaks ties between equal times (FIFO)
	Handler Handler
	Op      uint32
	A, B    uint64
}

type eventHeap []Event

func (h eventHeap) Less(i, j int) bool {
	if h[i].At != h[j].At {
		return h[i].At < h[j].At
	}
	return h[i].Seq < h[j].Seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

// Sim is the clock and the queue. It is not safe for concurrent use: a machine and
// everything in it run on one goroutine.
type Sim struct {
	now    Time
	seq    uint64
	events eventHeap
	rng    *rand.Rand
	seed   uint64
}

// New returns a simulation at time 0 whose random numbers come from seed.
func New(seed uint64) *Sim {
	return &Sim{rng: rand.New(rand.NewPCG(seed, seed^0x5ACC_B00C)), seed: seed}
}

// Now is the current virtual time.
func (s *Sim) Now() Time { return s.now }

// Seed is the seed the simulation was created with.
func (s *Sim) Seed() uint64 { return s.seed }

// Rand is the simulation's seeded generator. Everything random in a run draws from
// it, in a deterministic order.
func (s *Sim) Rand() *rand.Rand { return s.rng }

// Schedule queues an event delay nanoseconds from now.
func (s *Sim) Schedule(delay Time, h Handler, op uint32, a, b uint64) {
	s.seq++
	// heap.Push boxes its argument; push by hand to keep scheduling allocation-free.
	s.events = append(s.events, Event{At: s.now + delay, Seq: s.seq, Handler: h, Op: op, A: a, B: b})
	up(s.events, len(s.events)-1)
}

// Pending reports how many events are queued.
func (s *Sim) Pending() int { return len(s.events) }

// Next returns the time of the earliest pending event.
func (s *Sim) Next() (Time, bool) {
	if len(s.events) == 0 {
		return 0, false
	}
	return s.events[0].At, true
}

// RunUntil runs, in order, every event due at or before t (including events that
// those events schedule on the way) and leaves the clock at t. The clock never moves
// backwards: a t in the past runs what is due now.
func (s *Sim) RunUntil(t Time) {
	if t < s.now {
		t = s.now
	}
	for len(s.events) > 0 && s.events[0].At <= t {
		ev := s.popFront()
		s.now = ev.At
		ev.Handler.HandleEvent(ev)
	}
	s.now = t
}

// Advance runs every event due in the next d nanoseconds and moves the clock by d.
func (s *Sim) Advance(d Time) { s.RunUntil(s.now + d) }

// Step advances to the earliest pending event and runs every event due at that
// time. It reports false, and does nothing, when nothing is pending.
func (s *Sim) Step() bool {
	t, ok := s.Next()
	if !ok {
		return false
	}
	s.RunUntil(t)
	return true
}

func (s *Sim) popFront() Event {
	h := s.events
	n := len(h) - 1
	h.Swap(0, n)
	ev := h[n]
	h[n] = Event{}
	s.events = h[:n]
	if n > 0 {
		down(s.events, 0)
	}
	return ev
}

// up restores the heap property above i.
func up(h eventHeap, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.Less(i, p) {
			return
		}
		h.Swap(i, p)
		i = p
	}
}

// down restores the heap property below i. The heap is kept by hand rather than
// with container/heap, whose Push and Pop box every event.
func down(h eventHeap, i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && h.Less(r, l) {
			j = r
		}
		if !h.Less(j, i) {
			return
		}
		h.Swap(i, j)
		i = j
	}
}
