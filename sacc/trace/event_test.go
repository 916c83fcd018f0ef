package trace_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

func seqs(events []trace.Event) []uint64 {
	out := make([]uint64, len(events))
	for i, e := range events {
		out[i] = e.Seq
	}
	return out
}

func TestTracerSeqIncrementsEvenWithoutSinks(t *testing.T) {
	tr := trace.NewTracer(sim.New(1))
	if tr.Seq() != 0 {
		t.Fatalf("Seq before any event = %d, want 0", tr.Seq())
	}
	for i := range uint64(5) {
		tr.EmitReady()
		if tr.Seq() != i+1 {
			t.Fatalf("after %d events with no sink, Seq = %d", i+1, tr.Seq())
		}
	}
	var buf trace.Buffer
	tr.Attach(&buf)
	tr.EmitIdle(1)
	if len(buf.Events) != 1 || buf.Events[0].Seq != 6 || tr.Seq() != 6 {
		t.Errorf("first recorded event has Seq %v, tracer Seq %d; want 6, 6", seqs(buf.Events), tr.Seq())
	}
}

func TestTracerStampsSimTimeKindAndArgs(t *testing.T) {
	s := sim.New(1)
	tr := trace.NewTracer(s)
	var buf trace.Buffer
	tr.Attach(&buf)
	steps := []struct {
		advance sim.Time
		emit    func()
		kind    trace.Kind
		args    [trace.MaxArgs]uint64
	}{
		{0, func() { tr.EmitEnable(64, 32) }, trace.Enable, [trace.MaxArgs]uint64{64, 32}},
		{2000, func() { tr.EmitReady() }, trace.Ready, [trace.MaxArgs]uint64{}},
		{0, func() { tr.EmitDoorbell(1, 0) }, trace.Doorbell, [trace.MaxArgs]uint64{1, 0}},
		{123, func() { tr.EmitCQPost(0, 0x40, 0, 1) }, trace.CQPost, [trace.MaxArgs]uint64{0, 0x40, 0, 1}},
		{1 << 40, func() { tr.EmitIOMMUFault(1, 2, 3, 4) }, trace.IOMMUFault, [trace.MaxArgs]uint64{1, 2, 3, 4}},
	}
	for _, st := range steps {
		s.Advance(st.advance)
		st.emit()
	}
	if len(buf.Events) != len(steps) {
		t.Fatalf("%d events recorded, want %d", len(buf.Events), len(steps))
	}
	var now sim.Time
	for i, st := range steps {
		now += st.advance
		want := trace.Event{Seq: uint64(i + 1), Time: now, Kind: st.kind, Args: st.args}
		if buf.Events[i] != want {
			t.Errorf("event %d = %+v, want %+v", i, buf.Events[i], want)
		}
	}
}

// emitter emits from inside a simulation event.
type emitter struct {
	tr *trace.Tracer
}

func (e *emitter) HandleEvent(ev sim.Event) { e.tr.EmitIdle(ev.A) }

func TestEventsEmittedFromSimEventsCarryTheirTime(t *testing.T) {
	s := sim.New(1)
	tr := trace.NewTracer(s)
	var buf trace.Buffer
	tr.Attach(&buf)
	h := &emitter{tr}
	s.Schedule(500, h, 0, 1, 0)
	s.Schedule(70, h, 0, 2, 0)
	s.RunUntil(10_000)
	if len(buf.Events) != 2 || buf.Events[0].Time != 70 || buf.Events[1].Time != 500 ||
		buf.Events[0].Args[0] != 2 || buf.Events[1].Args[0] != 1 {
		t.Errorf("events %+v", buf.Events)
	}
}

func TestAttachAndDetach(t *testing.T) {
	tr := trace.NewTracer(sim.New(1))
	var a trace.Buffer
	var b []trace.Event
	c := trace.NewRing(16)

	detachA := tr.Attach(&a)
	detachB := tr.Attach(trace.Func(func(ev trace.Event) { b = append(b, ev) }))
	tr.Attach(c)
	tr.EmitReady() // 1: a, b, c

	// A Func is not comparable: detach must not compare sinks.
	detachB()
	tr.EmitReady() // 2: a, c

	detachB() // a second detach is a no-op
	detachA()
	tr.EmitReady() // 3: c

	tr.Attach(&a)
	tr.EmitReady() // 4: a, c
	detachA()      // the old detach does not remove the new attachment
	tr.EmitReady() // 5: a, c

	cases := []struct {
		sink string
		got  []trace.Event
		want []uint64
	}{
		{"buffer attached twice", a.Events, []uint64{1, 2, 4, 5}},
		{"func detached after one event", b, []uint64{1}},
		{"ring never detached", c.Events(), []uint64{1, 2, 3, 4, 5}},
	}
	for _, cs := range cases {
		if got := seqs(cs.got); !slices.Equal(got, cs.want) {
			t.Errorf("%s saw events %v, want %v", cs.sink, got, cs.want)
		}
	}
}

func TestSinksReceiveEventsInAttachOrder(t *testing.T) {
	tr := trace.NewTracer(sim.New(1))
	var order []int
	for i := range 4 {
		tr.Attach(trace.Func(func(trace.Event) { order = append(order, i) }))
	}
	tr.EmitReady()
	if want := []int{0, 1, 2, 3}; !slices.Equal(order, want) {
		t.Errorf("sinks called in order %v, want %v", order, want)
	}
}

func TestTheSameSinkAttachedTwiceSeesEachEventTwice(t *testing.T) {
	tr := trace.NewTracer(sim.New(1))
	var buf trace.Buffer
	first := tr.Attach(&buf)
	tr.Attach(&buf)
	tr.EmitReady()
	first()
	tr.EmitReady()
	if got, want := seqs(buf.Events), []uint64{1, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

func TestASinkMayDetachItselfDuringRecord(t *testing.T) {
	tr := trace.NewTracer(sim.New(1))
	var detach func()
	var once []uint64
	detach = tr.Attach(trace.Func(func(ev trace.Event) {
		once = append(once, ev.Seq)
		detach()
	}))
	var after trace.Buffer
	tr.Attach(&after)
	tr.EmitReady()
	tr.EmitReady()
	if !slices.Equal(once, []uint64{1}) || !slices.Equal(seqs(after.Events), []uint64{1, 2}) {
		t.Errorf("self-detaching sink saw %v, the next sink %v; want [1] and [1 2]", once, seqs(after.Events))
	}
}

func TestASinkThatEmitsDoesNotChangeTheEventOtherSinksSee(t *testing.T) {
	// A sink may react to an event by emitting another (a monitor, a checker). Every
	// sink must still see each event with its own kind, sequence number and arguments.
	tr := trace.NewTracer(sim.New(1))
	tr.Attach(trace.Func(func(ev trace.Event) {
		if ev.Kind == trace.CQFull {
			tr.EmitGuestError(0xDEAD, 4, trace.ErrHalted, 0)
		}
	}))
	var buf trace.Buffer
	tr.Attach(&buf)
	tr.EmitCQFull(7, 7)

	want := map[uint64]trace.Event{
		1: {Seq: 1, Kind: trace.CQFull, Args: [trace.MaxArgs]uint64{7, 7}},
		2: {Seq: 2, Kind: trace.GuestError, Args: [trace.MaxArgs]uint64{0xDEAD, 4, trace.ErrHalted}},
	}
	if len(buf.Events) != 2 {
		t.Fatalf("buffer holds %d events, want 2: %v", len(buf.Events), describe(buf.Events))
	}
	got := map[uint64]trace.Event{}
	for _, e := range buf.Events {
		got[e.Seq] = e
	}
	for seq, w := range want {
		if got[seq] != w {
			t.Errorf("event %d reached the buffer as %v, want %v (buffer: %v)",
				seq, describe([]trace.Event{got[seq]}), describe([]trace.Event{w}), describe(buf.Events))
		}
	}
}

// describe prints events with their sequence numbers (String omits them).
func describe(events []trace.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = fmt.Sprintf("#%d %s %s", e.Seq, e.Kind, e.AppendArgs(nil))
	}
	return out
}

func TestNestedEmitsAtAnyDepthReachEverySinkIntact(t *testing.T) {
	// A chain of sinks reacting to events by emitting more, deeper than any fixed
	// number of levels: every sink still sees every event exactly as emitted.
	for _, depth := range []int{1, 3, 4, 5, 12} {
		t.Run(fmt.Sprintf("depth %d", depth), func(t *testing.T) {
			tr := trace.NewTracer(sim.New(1))
			var before, after trace.Buffer
			tr.Attach(&before)
			// A doorbell's sq_tail is its level of nesting, its sq_head the sequence
			// number of the event being delivered when it was emitted.
			tr.Attach(trace.Func(func(ev trace.Event) {
				if ev.Kind == trace.Doorbell && ev.Args[0] < uint64(depth) {
					tr.EmitDoorbell(ev.Args[0]+1, ev.Seq)
				}
			}))
			tr.Attach(&after)
			tr.EmitDoorbell(0, 0)
			if len(before.Events) != depth+1 || len(after.Events) != depth+1 {
				t.Fatalf("sinks saw %d and %d events, want %d", len(before.Events), len(after.Events), depth+1)
			}
			bySeq := map[uint64]trace.Event{}
			for _, e := range before.Events {
				bySeq[e.Seq] = e
			}
			for _, e := range after.Events {
				if bySeq[e.Seq] != e {
					t.Errorf("event %d: first sink saw %v, last sink %v",
						e.Seq, describe([]trace.Event{bySeq[e.Seq]}), describe([]trace.Event{e}))
				}
				// Event n (n = Args[0]) was emitted while event Args[1] was delivered.
				if e.Args[0] > 0 && bySeq[e.Args[1]].Args[0] != e.Args[0]-1 {
					t.Errorf("event %d claims parent %d, which has level %d", e.Seq, e.Args[1], bySeq[e.Args[1]].Args[0])
				}
			}
		})
	}
}

func TestRingRecordsTheSameAloneOrWithOtherSinks(t *testing.T) {
	// A Ring that is the only sink may be filled directly; the result must be what
	// Record gives when other sinks are attached too.
	run := func(withOther bool) []trace.Event {
		s := sim.New(1)
		tr := trace.NewTracer(s)
		r := trace.NewRing(5)
		tr.Attach(r)
		if withOther {
			tr.Attach(trace.Func(func(trace.Event) {}))
		}
		// Kinds with one to four arguments, so that every slot is filled and cleared.
		emit := []func(i uint64){
			func(i uint64) { tr.EmitGuestError(i, i<<8, i<<16, i<<32) },
			func(i uint64) { tr.EmitCQHeadWrite(i) },
			func(i uint64) { tr.EmitCPURead(i, i<<8, i<<16) },
			func(uint64) { tr.EmitReady() },
			func(i uint64) { tr.EmitFetch(i, i<<8) },
		}
		for i := range uint64(13) {
			s.Advance(sim.Time(i * 10))
			emit[i%uint64(len(emit))](i)
		}
		if r.Total() != 13 {
			t.Errorf("Total = %d, want 13", r.Total())
		}
		return r.Events()
	}
	alone, shared := run(false), run(true)
	if !slices.Equal(alone, shared) {
		t.Errorf("ring alone: %v\nring with another sink: %v", describe(alone), describe(shared))
	}
}

func TestRingKeepsTheLastNInOrder(t *testing.T) {
	cases := []struct {
		name  string
		n     int
		emit  int
		want  []uint64
		total uint64
	}{
		{"empty", 4, 0, []uint64{}, 0},
		{"partly filled", 4, 3, []uint64{1, 2, 3}, 3},
		{"exactly full", 4, 4, []uint64{1, 2, 3, 4}, 4},
		{"one past full", 4, 5, []uint64{2, 3, 4, 5}, 5},
		{"wrapped several times", 4, 11, []uint64{8, 9, 10, 11}, 11},
		{"wrapped to a multiple of N", 4, 12, []uint64{9, 10, 11, 12}, 12},
		{"size one", 1, 3, []uint64{3}, 3},
		{"size zero keeps one", 0, 3, []uint64{3}, 3},
		{"negative size keeps one", -5, 2, []uint64{2}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := trace.NewTracer(sim.New(1))
			r := trace.NewRing(c.n)
			tr.Attach(r)
			for range c.emit {
				tr.EmitReady()
			}
			if got := seqs(r.Events()); !slices.Equal(got, c.want) {
				t.Errorf("Events() seqs %v, want %v", got, c.want)
			}
			if r.Total() != c.total {
				t.Errorf("Total() = %d, want %d", r.Total(), c.total)
			}
		})
	}
}

func TestRingEventsIsACopy(t *testing.T) {
	r := trace.NewRing(2)
	e := trace.Event{Seq: 1, Kind: trace.Ready}
	r.Record(&e)
	got := r.Events()
	got[0].Seq = 99
	e.Seq = 98 // the ring copied the event, not the pointer
	if again := r.Events(); again[0].Seq != 1 {
		t.Errorf("the ring's event changed to Seq %d", again[0].Seq)
	}
}

func TestBufferResetKeepsStorage(t *testing.T) {
	tr := trace.NewTracer(sim.New(1))
	var buf trace.Buffer
	tr.Attach(&buf)
	for range 10 {
		tr.EmitReady()
	}
	c := cap(buf.Events)
	buf.Reset()
	if len(buf.Events) != 0 || cap(buf.Events) != c {
		t.Errorf("after Reset: len %d cap %d, want 0 and %d", len(buf.Events), cap(buf.Events), c)
	}
	tr.EmitIdle(5)
	if len(buf.Events) != 1 || buf.Events[0].Seq != 11 || buf.Events[0].Kind != trace.Idle {
		t.Errorf("after Reset and one event: %+v", buf.Events)
	}
	var empty trace.Buffer
	empty.Reset() // a zero Buffer can be reset
	if len(empty.Events) != 0 {
		t.Errorf("zero Buffer after Reset has %d events", len(empty.Events))
	}
}

func TestEmitAllocatesNothing(t *testing.T) {
	cases := []struct {
		name  string
		sinks func() []trace.Sink
	}{
		{"no sinks", func() []trace.Sink { return nil }},
		{"a ring", func() []trace.Sink { return []trace.Sink{trace.NewRing(64)} }},
		{"two rings", func() []trace.Sink { return []trace.Sink{trace.NewRing(8), trace.NewRing(1)} }},
		{"a func counting events", func() []trace.Sink {
			n := 0
			return []trace.Sink{trace.Func(func(trace.Event) { n++ })}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := sim.New(1)
			tr := trace.NewTracer(s)
			for _, sink := range c.sinks() {
				tr.Attach(sink)
			}
			var i uint64
			allocs := testing.AllocsPerRun(1000, func() {
				i++
				tr.EmitCQPost(i, 0x40, 0, 1)
			})
			if allocs != 0 {
				t.Errorf("EmitCQPost: %v allocations per call, want 0", allocs)
			}
		})
	}
}

func BenchmarkEmitRing(b *testing.B) {
	tr := trace.NewTracer(sim.New(1))
	tr.Attach(trace.NewRing(1024))
	b.ReportAllocs()
	var i uint64
	for b.Loop() {
		i++
		tr.EmitCQPost(i, 0x40, 0, 1)
	}
}

// blind is a sink that never reads the source of an event.
type blind struct{ n int }

func (b *blind) Record(*trace.Event) { b.n++ }
func (*blind) IgnoresPC()            {}

// A deferred source is looked for once per operation, at its first event, and
// only while some sink reads sources; SavePC and RestorePC keep it deferred.
func TestDeferredPCIsFoundOnlyWhenASinkReadsIt(t *testing.T) {
	tr := trace.NewTracer(sim.New(1))
	finds := 0
	tr.SetPCFinder(func() uintptr { finds++; return 0x1234 })
	b := &blind{}
	tr.Attach(b)
	tr.DeferPC()
	tr.EmitIdle(1)
	tr.EmitIdle(2)
	if finds != 0 || tr.PC() != 0 || b.n != 2 {
		t.Fatalf("blind sinks only: %d finds, PC %#x, %d events; want 0, 0, 2", finds, tr.PC(), b.n)
	}
	var buf trace.Buffer
	detach := tr.Attach(&buf)
	saved := tr.SavePC()
	tr.SetPC(0x99) // another source for a while, as a landing store has
	tr.EmitIdle(3)
	tr.RestorePC(saved)
	if finds != 0 {
		t.Fatalf("SetPC and RestorePC looked for the deferred source (%d finds)", finds)
	}
	tr.EmitIdle(4)
	tr.EmitIdle(5)
	if finds != 1 {
		t.Fatalf("two events of one operation: %d finds, want 1", finds)
	}
	want := []uintptr{0x99, 0x1234, 0x1234}
	for i, ev := range buf.Events {
		if ev.PC != want[i] {
			t.Errorf("event %d: PC %#x, want %#x", ev.Seq, ev.PC, want[i])
		}
	}
	detach()
	tr.DeferPC()
	tr.EmitIdle(6)
	if finds != 1 {
		t.Errorf("after the reading sink left: %d finds, want 1", finds)
	}
}

// only is a sink that wants the kinds in its set and counts what it gets.
type only struct {
	kinds []trace.Kind
	got   []trace.Kind
	emit  func() // called for each event it gets, to emit one of its own
}

func (o *only) Record(ev *trace.Event) {
	o.got = append(o.got, ev.Kind)
	if o.emit != nil {
		o.emit()
	}
}
func (o *only) Wants(k trace.Kind) bool { return slices.Contains(o.kinds, k) }

// A KindSink gets the kinds it wants and no others, and a Ring beside it records
// exactly what it records beside a sink that takes everything, nested events
// included: the kinds the KindSink leaves alone are built in the Ring's slots.
func TestKindSinksGetTheirKindsAndLeaveTheRingAlone(t *testing.T) {
	run := func(filtered bool) ([]trace.Event, []trace.Kind) {
		s := sim.New(1)
		tr := trace.NewTracer(s)
		o := &only{kinds: []trace.Kind{trace.DMAWrite}}
		o.emit = func() {
			if o.got[len(o.got)-1] == trace.DMAWrite {
				tr.EmitIdle(7) // a sink's own event, nested in the DMA write's
			}
		}
		var sink trace.Sink = o
		if !filtered {
			// The same sink, taking every kind and passing on the ones it wants.
			sink = trace.Func(func(ev trace.Event) {
				if o.Wants(ev.Kind) {
					o.Record(&ev)
				}
			})
		}
		tr.Attach(sink)
		r := trace.NewRing(8)
		tr.Attach(r)
		for i := range uint64(20) {
			s.Advance(10)
			switch i % 3 {
			case 0:
				tr.EmitDMAWrite(i, i<<12, 64)
			case 1:
				tr.EmitFetch(i, i<<8)
			default:
				tr.EmitCPURead(i, 4, i)
			}
		}
		return r.Events(), o.got
	}
	ringF, gotF := run(true)
	ringU, gotU := run(false)
	if !slices.Equal(ringF, ringU) {
		t.Errorf("ring beside a KindSink: %v\nbeside a sink of every kind: %v", describe(ringF), describe(ringU))
	}
	if !slices.Equal(gotF, gotU) || len(gotF) != 7 {
		t.Errorf("the KindSink got %v, want the 7 DMA writes %v", gotF, gotU)
	}
}
