// Package sim is the simulation core under the machine: a virtual clock in
// nanoseconds, an event queue ordered by (time, sequence number), and a seeded random
// number generator. Nothing here reads the wall clock, so a run is a function of its
// configuration and seed alone.
//
// # Stopping a run
//
// The CPU side of a run (a driver, a scenario, user code, a learner's exercise) is
// ordinary sequential Go code calling machine and CPU operations, and what ends it
// early is noticed deep inside it: a runner closing or a viewer leaving, in a trace
// sink called from a device event; a user access to an unmapped page, in the
// process's page table; a watchdog, in an event of its own. Stop ends the run from
// there: it unwinds the goroutine to the Run that started the run, which returns a
// *Stopped with the reason given, so the caller tells its own stops from others
// with errors.Is and errors.As. A genuine panic inside Run comes back as a *Panic
// with its stack. This is the only way a run is ended from inside, and this package
// is the only one that panics or recovers to do it: no panic crosses a package
// boundary as control flow. A stop from inside an event leaves the machine partway
// through that event: whoever stops a run there discards the machine or only reads
// it (a process fault is raised before its access, so that machine is whole).
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

// The queue is a binary min-heap of small, pointer-free entries; what an event
// carries lives in a slot table beside it. Swapping heap entries is then a plain
// copy of 24 bytes, with no write barriers, and nothing is boxed or allocated once
// the tables have grown to the run's high-water mark.
type entry struct {
	at   Time
	seq  uint64
	slot uint32
}

type payload struct {
	handler Handler
	op      uint32
	a, b    uint64
}

func less(x, y *entry) bool { return x.at < y.at || x.at == y.at && x.seq < y.seq }

// Sim is the clock and the queue. It is not safe for concurrent use: a machine and
// everything in it run on one goroutine.
type Sim struct {
	now   Time
	seq   uint64
	heap  []entry
	slots []payload
	free  []uint32
	rng   *rand.Rand
	seed  uint64
	// due is the time of the earliest pending event (heap[0].at), or never when
	// nothing is pending: Advance, which every CPU operation calls, tests it alone
	// and stays small enough to inline. RunUntil goes by the heap itself.
	due Time
}

// never is due's value while nothing is pending: no event is ever due then.
const never = ^Time(0)

// New returns a simulation at time 0 whose random numbers come from seed.
func New(seed uint64) *Sim {
	return &Sim{rng: rand.New(rand.NewPCG(seed, seed^0x5ACC_B00C)), seed: seed, due: never}
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
	var slot uint32
	if n := len(s.free); n > 0 {
		slot = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		slot = uint32(len(s.slots))
		s.slots = append(s.slots, payload{})
	}
	// Field by field, straight into the slot: a whole payload value would be
	// built on the stack and copied.
	p := &s.slots[slot]
	p.handler, p.op, p.a, p.b = h, op, a, b
	at := s.now + delay
	s.heap = append(s.heap, entry{at: at, seq: s.seq, slot: slot})
	s.up(len(s.heap) - 1)
	s.due = min(s.due, at)
}

// Pending reports how many events are queued.
func (s *Sim) Pending() int { return len(s.heap) }

// Next returns the time of the earliest pending event.
func (s *Sim) Next() (Time, bool) {
	if len(s.heap) == 0 {
		return 0, false
	}
	return s.heap[0].at, true
}

// RunUntil runs, in order, every event due at or before t (including events that
// those events schedule on the way) and leaves the clock at t. The clock never moves
// backwards: a t in the past runs what is due now.
func (s *Sim) RunUntil(t Time) {
	if t < s.now {
		t = s.now
	}
	for len(s.heap) > 0 && s.heap[0].at <= t {
		e := s.heap[0]
		if last := len(s.heap) - 1; last > 0 {
			s.heap[0] = s.heap[last]
			s.heap = s.heap[:last]
			s.down(0)
			s.due = s.heap[0].at
		} else {
			// The only event pending, the usual case of a device working one
			// descriptor at a time: nothing to sift.
			s.heap = s.heap[:0]
			s.due = never
		}
		// The payload is read field by field into registers rather than copied
		// whole; the slot keeps no handler reference once it is free.
		p := &s.slots[e.slot]
		h, op, a, b := p.handler, p.op, p.a, p.b
		p.handler = nil
		s.free = append(s.free, e.slot)
		s.now = e.at
		h.HandleEvent(Event{At: e.at, Seq: e.seq, Handler: h, Op: op, A: a, B: b})
	}
	s.now = t
}

// Advance runs every event due in the next d nanoseconds and moves the clock by d.
// Most CPU operations have nothing due in their span, and then it only moves the
// clock, without RunUntil's loop.
func (s *Sim) Advance(d Time) {
	// The clock moves first: RunUntil then runs what is due up to the new time,
	// each event at its own time, and leaves the clock there.
	if s.now += d; s.now >= s.due {
		s.RunUntil(s.now)
	}
}

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

func (s *Sim) up(i int) {
	h := s.heap
	for i > 0 {
		p := (i - 1) / 2
		if !less(&h[i], &h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (s *Sim) down(i int) {
	h := s.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && less(&h[r], &h[l]) {
			j = r
		}
		if !less(&h[j], &h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}
