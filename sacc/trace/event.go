// Package trace defines the typed events of a machine run — one for every
// architectural action, stamped with virtual time and a sequence number — and the
// sinks that keep or print them: an in-memory buffer and ring, QEMU-style text, JSON
// lines, and Chrome trace-event JSON that opens in Perfetto.
//
// The kinds table in kind.go is the one list of kinds: each entry gives a kind's
// trace name, side, meaning, and its arguments with how they print. From it,
// go generate ./sacc/trace writes emit_gen.go, one emitter per kind in the manner of
// QEMU's tracetool: tr.EmitCQPost(cqTail, reqID, status, phase) records
// sacc_cq_post, so a call site passes exactly the kind's arguments, named as the
// table names them. A test fails when emit_gen.go no longer matches the table.
package trace

import (
	"github.com/saccbook/saccbook/sacc/sim"
)

// MaxArgs is the most arguments an event carries: upstream's sacc_sq_fetch trace
// point, a whole descriptor with its slot, has seven.
const MaxArgs = 8

// Event is one architectural action. Its meaning and the names of its arguments come
// from its Kind; unused arguments are zero. Events are plain values: recording one
// allocates nothing.
type Event struct {
	Seq  uint64   // 1, 2, 3 … in the order the machine did things
	Time sim.Time // virtual nanoseconds
	Kind Kind
	Args [MaxArgs]uint64
	PC   uintptr // for CPU-side events: the program counter of the code that caused it, or 0
}

// Arg returns the argument called name, if the event's kind has one.
func (e Event) Arg(name string) (uint64, bool) {
	info := e.Kind.Info()
	for i, a := range info.Args {
		if a.Name == name {
			return e.Args[i], true
		}
	}
	return 0, false
}

// Sink receives events as they happen. The pointer is only valid during the call:
// a sink that keeps an event copies it (*ev).
type Sink interface {
	Record(ev *Event)
}

// Tracer stamps events with the machine's virtual time and a sequence number and
// hands them to its sinks. Every kind has its own emitter (EmitCQPost for CQPost)
// whose parameters are the kind's arguments. The zero value is not usable; call
// NewTracer. Emitting to a nil *Tracer does nothing.
type Tracer struct {
	sim *sim.Sim
	seq uint64
	// The events being emitted, one per level of nesting (a sink may itself cause
	// an event); sinks get a pointer into this array, so emitting allocates nothing.
	evs   [4]Event
	depth int
	// ring is the Ring that is the only sink of the kinds marked in ringOnly:
	// events of those kinds are built in place, in its next slot.
	ring     *Ring
	ringOnly [numKinds]bool
	pc       uintptr // source of the CPU operation under way, stamped on its events
	// pcDeferred says the operation under way has a source that findPC has not
	// looked for yet (DeferPC); readsPC says some sink reads Event.PC at all.
	pcDeferred bool
	readsPC    bool
	findPC     func() uintptr
	sinks      []Sink
	wants      []*[numKinds]bool // per sink: the kinds a KindSink wants; nil for every kind
	ids        []uint64
	nextID     uint64
	// dialect is how the machine's profile spells its events in text.
	dialect Dialect
}

// NewTracer returns a tracer that reads time from s.
func NewTracer(s *sim.Sim) *Tracer { return &Tracer{sim: s} }

// Attach adds a sink; every later event reaches it. The returned function detaches
// it again.
func (t *Tracer) Attach(s Sink) (detach func()) {
	t.nextID++
	id := t.nextID
	var wants *[numKinds]bool
	if ks, ok := s.(KindSink); ok {
		wants = new([numKinds]bool)
		for k := range wants {
			wants[k] = ks.Wants(Kind(k))
		}
	}
	t.sinks = append(t.sinks, s)
	t.wants = append(t.wants, wants)
	t.ids = append(t.ids, id)
	t.sinksChanged()
	return func() {
		for i, x := range t.ids {
			if x == id {
				// New slices, so that a record under way keeps the ones it ranges over.
				t.sinks = append(t.sinks[:i:i], t.sinks[i+1:]...)
				t.wants = append(t.wants[:i:i], t.wants[i+1:]...)
				t.ids = append(t.ids[:i:i], t.ids[i+1:]...)
				t.sinksChanged()
				return
			}
		}
	}
}

// KindSink is a sink that wants only some kinds of event, such as the CPU
// cache's snoop, which wants DMA writes: it receives no others. Wants is asked
// once per kind when the sink is attached. A Ring whose only company is such
// sinks still has the kinds they do not want built in place, as if alone.
type KindSink interface {
	Sink
	Wants(k Kind) bool
}

func (t *Tracer) sinksChanged() {
	t.ring, t.ringOnly = nil, [numKinds]bool{}
	for k := range t.ringOnly {
		var only Sink
		n := 0
		for i, s := range t.sinks {
			if w := t.wants[i]; w == nil || w[k] {
				only, n = s, n+1
			}
		}
		if r, ok := only.(*Ring); ok && n == 1 {
			t.ring, t.ringOnly[k] = r, true
		}
	}
	t.readsPC = false
	for _, s := range t.sinks {
		if _, blind := s.(PCBlind); !blind {
			t.readsPC = true
		}
	}
}

// PCBlind is a sink that never reads Event.PC, such as the text and JSON writers.
// While every sink attached is one, the tracer does not look for the source of
// the events at all (DeferPC), and their PC is 0.
type PCBlind interface {
	Sink
	IgnoresPC()
}

// SetPC marks the events emitted from now on as caused by the code at pc (0 for
// none). The CPU sets it around each operation so that views can show the source
// line behind a CPU-side event.
func (t *Tracer) SetPC(pc uintptr) { t.pc, t.pcDeferred = pc, false }

// SetPCFinder installs how DeferPC's source is found: the CPU walks the Go stack
// from the emitting code up to the code that asked for the access.
func (t *Tracer) SetPCFinder(find func() uintptr) { t.findPC = find }

// DeferPC marks the events emitted from now on as caused by the operation under
// way, whose source the PC finder looks for only when an event needs it: when one
// is emitted, or PC is asked, while a sink reads sources. Walking the stack is the
// costliest part of an emulated access, and most accesses emit nothing.
func (t *Tracer) DeferPC() { t.pc, t.pcDeferred = 0, t.findPC != nil }

// PC is the source stamped on the events emitted now (see SetPC and DeferPC):
// a deferred source is looked for here, and is 0 while no sink reads sources.
func (t *Tracer) PC() uintptr {
	if t.pcDeferred {
		if !t.readsPC {
			return 0 // left unresolved: nothing would read it
		}
		t.pc, t.pcDeferred = t.findPC(), false
	}
	return t.pc
}

// PCMark is the tracer's source, known or deferred, as SavePC saw it.
type PCMark struct {
	pc       uintptr
	deferred bool
}

// SavePC returns the source as it is, without looking for a deferred one, so that
// code that stamps other events for a while (a store landing from the store
// buffer) can put it back with RestorePC.
func (t *Tracer) SavePC() PCMark { return PCMark{t.pc, t.pcDeferred} }

// RestorePC puts back a source saved with SavePC.
func (t *Tracer) RestorePC(m PCMark) { t.pc, t.pcDeferred = m.pc, m.deferred }

// Seq is the sequence number of the last event emitted (0 before the first).
func (t *Tracer) Seq() uint64 { return t.seq }

// SetDialect says how the events of this tracer's machine are spelled in text: the
// machine sets it from its profile, and text sinks ask for it with Dialect.
func (t *Tracer) SetDialect(d Dialect) { t.dialect = d }

// Dialect is the spelling set with SetDialect: the kinds table's own unless the
// machine's profile has its own. A nil tracer has the table's.
func (t *Tracer) Dialect() Dialect {
	if t == nil {
		return Dialect{}
	}
	return t.dialect
}

// emit records an event of kind k with up to four arguments. Code outside this
// package emits through the typed emitters generated from the kinds table
// (emit_gen.go), which pass each kind's arguments in its order and zero the rest.
// A nil tracer records nothing, so a component built without one need not check.
func (t *Tracer) emit(k Kind, a0, a1, a2, a3 uint64) {
	if t == nil {
		return
	}
	if t.ringOnly[k] {
		// The in-memory recorder alone sees this kind, the case of every run that
		// only keeps its trace: build the event straight in the ring's next slot,
		// with the fields next would give it, and move past it. No copy, no call.
		r := t.ring
		t.seq++
		ev := &r.buf[r.next]
		ev.Seq, ev.Time, ev.Kind = t.seq, t.sim.Now(), k
		ev.Args[0], ev.Args[1], ev.Args[2], ev.Args[3] = a0, a1, a2, a3
		ev.Args[4], ev.Args[5], ev.Args[6], ev.Args[7] = 0, 0, 0, 0
		ev.PC = t.pc
		if t.pcDeferred {
			ev.PC = t.PC()
		}
		r.keep()
		return
	}
	if ev := t.next(k); ev != nil {
		ev.Args = [MaxArgs]uint64{a0, a1, a2, a3}
		if t.pcDeferred {
			ev.PC = t.PC() // outside next, which stays small enough to inline
		}
		t.dispatch(ev)
	}
}

// emitWide records an event of a kind with more than four arguments.
func (t *Tracer) emitWide(k Kind, args [MaxArgs]uint64) {
	if t == nil {
		return
	}
	if ev := t.next(k); ev != nil {
		ev.Args = args
		if t.pcDeferred {
			ev.PC = t.PC()
		}
		if t.ringOnly[k] {
			t.ring.keep()
		} else {
			t.dispatch(ev)
		}
	}
}

// next numbers an event of kind k and returns where to build it, or nil when no
// sink would see it.
func (t *Tracer) next(k Kind) *Event {
	t.seq++
	var ev *Event
	switch {
	case t.ringOnly[k]:
		// The in-memory recorder alone: build the event straight in its slot.
		ev = &t.ring.buf[t.ring.next]
	case len(t.sinks) == 0:
		return nil
	case t.depth < len(t.evs):
		ev = &t.evs[t.depth]
	default:
		ev = new(Event)
	}
	ev.Seq, ev.Time, ev.Kind, ev.PC = t.seq, t.sim.Now(), k, t.pc
	return ev
}

// dispatch hands an event built by next to every sink that wants its kind, in
// the order they were attached.
func (t *Tracer) dispatch(ev *Event) {
	t.depth++
	wants := t.wants
	for i, s := range t.sinks {
		if w := wants[i]; w == nil || w[ev.Kind] {
			s.Record(ev)
		}
	}
	t.depth--
}

// Buffer is a sink that keeps every event in memory.
type Buffer struct {
	Events []Event
}

// Record appends ev.
func (b *Buffer) Record(ev *Event) { b.Events = append(b.Events, *ev) }

// Reset forgets the events but keeps the storage.
func (b *Buffer) Reset() { b.Events = b.Events[:0] }

// Ring is a sink that keeps the last N events in a fixed array; it never allocates
// after NewRing.
type Ring struct {
	buf   []Event
	next  int
	total uint64
}

// NewRing returns a ring that keeps the last n events (n ≥ 1).
func NewRing(n int) *Ring {
	if n < 1 {
		n = 1
	}
	return &Ring{buf: make([]Event, n)}
}

// Record stores ev, overwriting the oldest event when the ring is full.
func (r *Ring) Record(ev *Event) {
	r.buf[r.next] = *ev
	r.keep()
}

// keep moves past the slot just filled.
func (r *Ring) keep() {
	if r.next++; r.next == len(r.buf) {
		r.next = 0
	}
	r.total++
}

// Total is the number of events ever recorded.
func (r *Ring) Total() uint64 { return r.total }

// Events returns the kept events, oldest first.
func (r *Ring) Events() []Event {
	if r.total < uint64(len(r.buf)) {
		return append([]Event(nil), r.buf[:r.next]...)
	}
	return append(append([]Event(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}

// Func adapts a function to a Sink.
type Func func(Event)

// Record calls f with a copy of the event.
func (f Func) Record(ev *Event) { f(*ev) }
