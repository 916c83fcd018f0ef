package sim_test

import (
	"slices"
	"testing"

	"github.com/saccbook/saccbook/sacc/sim"
)

// ran is one event as a handler saw it.
type ran struct {
	Now sim.Time // the clock while the handler ran
	At  sim.Time
	Op  uint32
	A   uint64
}

// recorder records every event it handles; then, if set, calls after.
type recorder struct {
	s     *sim.Sim
	got   []ran
	after func(ev sim.Event)
}

func (r *recorder) HandleEvent(ev sim.Event) {
	r.got = append(r.got, ran{Now: r.s.Now(), At: ev.At, Op: ev.Op, A: ev.A})
	if r.after != nil {
		r.after(ev)
	}
}

func (r *recorder) ops() []uint32 {
	out := make([]uint32, len(r.got))
	for i, g := range r.got {
		out[i] = g.Op
	}
	return out
}

func newRecorder(seed uint64) (*sim.Sim, *recorder) {
	s := sim.New(seed)
	return s, &recorder{s: s}
}

// sched is one Schedule call made at time 0.
type sched struct {
	delay sim.Time
	op    uint32
}

func TestEventsRunInTimeThenSequenceOrder(t *testing.T) {
	cases := []struct {
		name  string
		sched []sched
		want  []uint32 // ops in the order they must run
	}{
		{"one event", []sched{{5, 1}}, []uint32{1}},
		{"already in time order", []sched{{1, 1}, {2, 2}, {3, 3}}, []uint32{1, 2, 3}},
		{"reverse time order", []sched{{3, 1}, {2, 2}, {1, 3}}, []uint32{3, 2, 1}},
		{"zero delay first", []sched{{7, 1}, {0, 2}}, []uint32{2, 1}},
		{"equal times FIFO", []sched{{4, 1}, {4, 2}, {4, 3}, {4, 4}}, []uint32{1, 2, 3, 4}},
		{"equal times interleaved with others", []sched{{9, 1}, {2, 2}, {9, 3}, {2, 4}, {5, 5}, {9, 6}, {2, 7}},
			[]uint32{2, 4, 7, 5, 1, 3, 6}},
		{"large delays", []sched{{1 << 62, 1}, {1 << 40, 2}, {1<<40 + 1, 3}}, []uint32{2, 3, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, r := newRecorder(1)
			for _, e := range c.sched {
				s.Schedule(e.delay, r, e.op, uint64(e.delay), 0)
			}
			if s.Pending() != len(c.sched) {
				t.Fatalf("Pending = %d, want %d", s.Pending(), len(c.sched))
			}
			s.RunUntil(1 << 63)
			if got := r.ops(); !slices.Equal(got, c.want) {
				t.Errorf("ran ops %v, want %v", got, c.want)
			}
			for _, g := range r.got {
				if g.Now != g.At || uint64(g.At) != g.A {
					t.Errorf("op %d ran at clock %d, scheduled for %d (delay %d)", g.Op, g.Now, g.At, g.A)
				}
			}
			if s.Pending() != 0 {
				t.Errorf("Pending = %d after running everything", s.Pending())
			}
		})
	}
}

func TestEqualTimesRunFIFOAtScale(t *testing.T) {
	// Enough events at one time that heap reordering would show if Seq were ignored;
	// other times are mixed in to disturb the heap.
	s, r := newRecorder(1)
	const n = 1000
	for i := range uint32(n) {
		s.Schedule(50, r, i, 0, 0)
		s.Schedule(sim.Time(i%97), r, n+i, 0, 0)
	}
	s.RunUntil(100)
	var at50 []uint32
	for _, g := range r.got {
		if g.At == 50 && g.Op < n {
			at50 = append(at50, g.Op)
		}
	}
	if len(at50) != n {
		t.Fatalf("%d events ran at 50, want %d", len(at50), n)
	}
	for i, op := range at50 {
		if op != uint32(i) {
			t.Fatalf("event %d at time 50 was op %d: equal times not FIFO", i, op)
		}
	}
	for i := 1; i < len(r.got); i++ {
		if r.got[i].At < r.got[i-1].At {
			t.Fatalf("event %d at %d ran after one at %d", i, r.got[i].At, r.got[i-1].At)
		}
	}
}

func TestEventSeqIsSchedulingOrder(t *testing.T) {
	s := sim.New(0)
	var seqs []uint64
	h := handlerFunc(func(ev sim.Event) { seqs = append(seqs, ev.Seq) })
	s.Schedule(3, h, 0, 0, 0)
	s.Schedule(1, h, 0, 0, 0)
	s.Schedule(3, h, 0, 0, 0)
	s.Schedule(2, h, 0, 0, 0)
	s.RunUntil(10)
	if want := []uint64{2, 4, 1, 3}; !slices.Equal(seqs, want) {
		t.Errorf("Seq in run order %v, want %v", seqs, want)
	}
}

type handlerFunc func(ev sim.Event)

func (f handlerFunc) HandleEvent(ev sim.Event) { f(ev) }

func TestEventsScheduledByARunningEvent(t *testing.T) {
	// The first event (op 1, at 10) schedules one follow-up (op 2) with delay d.
	// RunUntil(until) must run the follow-up exactly when 10+d <= until.
	cases := []struct {
		name    string
		d       sim.Time
		until   sim.Time
		wantRan bool
	}{
		{"same time, RunUntil at that time", 0, 10, true},
		{"same time, RunUntil later", 0, 100, true},
		{"later, still within t", 5, 15, true},
		{"later, exactly at t", 90, 100, true},
		{"later, past t", 91, 100, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, r := newRecorder(1)
			r.after = func(ev sim.Event) {
				if ev.Op == 1 {
					s.Schedule(c.d, r, 2, 0, 0)
				}
			}
			s.Schedule(10, r, 1, 0, 0)
			s.RunUntil(c.until)
			want := []ran{{Now: 10, At: 10, Op: 1}}
			if c.wantRan {
				want = append(want, ran{Now: 10 + c.d, At: 10 + c.d, Op: 2})
			}
			if !slices.Equal(r.got, want) {
				t.Errorf("ran %+v, want %+v", r.got, want)
			}
			if wantPending := 2 - len(want); s.Pending() != wantPending {
				t.Errorf("Pending = %d, want %d", s.Pending(), wantPending)
			}
			if s.Now() != c.until {
				t.Errorf("Now = %d, want %d", s.Now(), c.until)
			}
		})
	}
}

func TestSameTimeChainRunsBeforeLaterEvents(t *testing.T) {
	// An event that schedules at delay 0 runs after everything already queued for
	// that time (FIFO by Seq) but before anything later.
	s, r := newRecorder(1)
	r.after = func(ev sim.Event) {
		if ev.Op < 4 && ev.At == 10 && ev.A == 1 {
			s.Schedule(0, r, ev.Op+1, 1, 0) // a chain 1 → 2 → 3 → 4 at time 10
		}
	}
	s.Schedule(10, r, 1, 1, 0)
	s.Schedule(10, r, 100, 0, 0)
	s.Schedule(11, r, 200, 0, 0)
	s.RunUntil(10)
	if got, want := r.ops(), []uint32{1, 100, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("ran ops %v, want %v", got, want)
	}
	if s.Pending() != 1 {
		t.Errorf("Pending = %d, want 1 (the event at 11)", s.Pending())
	}
}

func TestRunUntilLeavesClockAtT(t *testing.T) {
	cases := []struct {
		name   string
		start  sim.Time // clock before (reached with RunUntil on an empty queue)
		events []sim.Time
		until  sim.Time
		want   sim.Time
		ran    int
	}{
		{"empty queue", 0, nil, 1000, 1000, 0},
		{"t after the last event", 0, []sim.Time{10, 20}, 1000, 1000, 2},
		{"t between events", 0, []sim.Time{10, 20}, 15, 15, 1},
		{"t exactly at an event", 0, []sim.Time{10, 20}, 20, 20, 2},
		{"t before every event", 0, []sim.Time{10, 20}, 5, 5, 0},
		{"t equal to now", 50, []sim.Time{0, 10}, 50, 50, 1},
		{"t in the past: clock stays", 50, []sim.Time{10}, 20, 50, 0},
		{"t in the past: runs what is due now", 50, []sim.Time{0, 1}, 0, 50, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, r := newRecorder(1)
			s.RunUntil(c.start)
			for _, d := range c.events {
				s.Schedule(d, r, 0, 0, 0)
			}
			s.RunUntil(c.until)
			if s.Now() != c.want {
				t.Errorf("Now = %d, want %d", s.Now(), c.want)
			}
			if len(r.got) != c.ran {
				t.Errorf("%d events ran, want %d", len(r.got), c.ran)
			}
		})
	}
}

func TestClockNeverMovesBackwards(t *testing.T) {
	s, r := newRecorder(3)
	rng := s.Rand()
	last := s.Now()
	for i := range 2000 {
		switch rng.IntN(4) {
		case 0:
			s.Schedule(sim.Time(rng.IntN(100)), r, uint32(i), 0, 0)
		case 1:
			s.RunUntil(sim.Time(rng.IntN(int(last) + 50))) // often in the past
		case 2:
			s.Advance(sim.Time(rng.IntN(20)))
		case 3:
			s.Step()
		}
		if s.Now() < last {
			t.Fatalf("step %d: clock went from %d back to %d", i, last, s.Now())
		}
		last = s.Now()
	}
	for i := 1; i < len(r.got); i++ {
		if r.got[i].Now < r.got[i-1].Now {
			t.Fatalf("handler %d saw clock %d after %d", i, r.got[i].Now, r.got[i-1].Now)
		}
	}
}

func TestStepWithNothingPendingReturnsFalseAndChangesNothing(t *testing.T) {
	cases := []struct {
		name  string
		start sim.Time
	}{
		{"fresh simulation", 0},
		{"clock already moved", 12345},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, ref := sim.New(9), sim.New(9)
			s.RunUntil(c.start)
			if s.Step() {
				t.Error("Step with nothing pending returned true")
			}
			if s.Now() != c.start || s.Pending() != 0 {
				t.Errorf("after Step: Now = %d, Pending = %d; want %d, 0", s.Now(), s.Pending(), c.start)
			}
			if _, ok := s.Next(); ok {
				t.Error("Next reports an event")
			}
			if s.Rand().Uint64() != ref.Rand().Uint64() {
				t.Error("Step changed the RNG state")
			}
		})
	}
}

func TestStepRunsAllEventsDueAtTheNextTime(t *testing.T) {
	s, r := newRecorder(1)
	r.after = func(ev sim.Event) {
		if ev.Op == 2 {
			s.Schedule(0, r, 9, 0, 0) // same time: belongs to the same Step
		}
	}
	for _, e := range []sched{{20, 4}, {10, 1}, {10, 2}, {10, 3}} {
		s.Schedule(e.delay, r, e.op, 0, 0)
	}
	steps := []struct {
		ok      bool
		now     sim.Time
		ops     []uint32
		pending int
	}{
		{true, 10, []uint32{1, 2, 3, 9}, 1},
		{true, 20, []uint32{4}, 0},
		{false, 20, nil, 0},
	}
	for i, want := range steps {
		r.got = nil
		if ok := s.Step(); ok != want.ok {
			t.Fatalf("Step %d returned %v, want %v", i, ok, want.ok)
		}
		if s.Now() != want.now || !slices.Equal(r.ops(), want.ops) || s.Pending() != want.pending {
			t.Errorf("Step %d: Now %d ran %v Pending %d; want %d %v %d", i, s.Now(), r.ops(), s.Pending(), want.now, want.ops, want.pending)
		}
	}
}

func TestNextReportsTheEarliestPendingTime(t *testing.T) {
	s, r := newRecorder(1)
	if _, ok := s.Next(); ok {
		t.Fatal("Next on an empty queue reports an event")
	}
	s.RunUntil(100)
	for _, d := range []sim.Time{30, 5, 70} {
		s.Schedule(d, r, 0, 0, 0)
	}
	if at, ok := s.Next(); !ok || at != 105 {
		t.Errorf("Next = %d, %v; want 105, true", at, ok)
	}
	s.Step()
	if at, ok := s.Next(); !ok || at != 130 {
		t.Errorf("after Step, Next = %d, %v; want 130, true", at, ok)
	}
}

func TestAdvance(t *testing.T) {
	cases := []struct {
		name   string
		start  sim.Time
		events []sim.Time // delays scheduled at start
		d      sim.Time
		ran    int
	}{
		{"zero on an empty queue", 0, nil, 0, 0},
		{"zero runs what is due now", 7, []sim.Time{0, 0, 1}, 0, 2},
		{"past some events", 0, []sim.Time{5, 10, 15}, 10, 2},
		{"past all events", 40, []sim.Time{5, 10, 15}, 1000, 3},
		{"before any event", 40, []sim.Time{5}, 4, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, r := newRecorder(1)
			s.RunUntil(c.start)
			for _, d := range c.events {
				s.Schedule(d, r, 0, 0, 0)
			}
			s.Advance(c.d)
			if s.Now() != c.start+c.d {
				t.Errorf("Now = %d, want %d", s.Now(), c.start+c.d)
			}
			if len(r.got) != c.ran {
				t.Errorf("%d events ran, want %d", len(r.got), c.ran)
			}
			if s.Pending() != len(c.events)-c.ran {
				t.Errorf("Pending = %d, want %d", s.Pending(), len(c.events)-c.ran)
			}
		})
	}
}

func TestAdvanceIsRelativeToNow(t *testing.T) {
	s, r := newRecorder(1)
	s.Advance(100)
	s.Schedule(50, r, 1, 0, 0) // due at 150
	s.Advance(49)
	if len(r.got) != 0 || s.Now() != 149 {
		t.Fatalf("after 149 ns: ran %d, Now %d", len(r.got), s.Now())
	}
	s.Advance(1)
	if len(r.got) != 1 || r.got[0].Now != 150 || s.Now() != 150 {
		t.Errorf("after 150 ns: ran %+v, Now %d", r.got, s.Now())
	}
}

func draws(s *sim.Sim, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = s.Rand().Uint64()
	}
	return out
}

func TestRandSameSeedSameSequence(t *testing.T) {
	for _, seed := range []uint64{0, 1, 42, 0x5ACC_B00C, ^uint64(0)} {
		a, b := sim.New(seed), sim.New(seed)
		if a.Seed() != seed {
			t.Errorf("Seed() = %#x, want %#x", a.Seed(), seed)
		}
		if x, y := draws(a, 64), draws(b, 64); !slices.Equal(x, y) {
			t.Errorf("seed %#x: two simulations drew different sequences", seed)
		}
	}
}

func TestRandDifferentSeedDifferentSequence(t *testing.T) {
	seeds := []uint64{0, 1, 2, 42, 0x5ACC_B00C, ^uint64(0)}
	seqs := make([][]uint64, len(seeds))
	for i, seed := range seeds {
		seqs[i] = draws(sim.New(seed), 16)
	}
	for i := range seeds {
		for j := i + 1; j < len(seeds); j++ {
			if slices.Equal(seqs[i], seqs[j]) {
				t.Errorf("seeds %#x and %#x give the same sequence", seeds[i], seeds[j])
			}
		}
	}
}

func TestRandIsIndependentOfScheduling(t *testing.T) {
	// The queue draws nothing: scheduling and running events leave the RNG alone.
	a, r := newRecorder(77)
	b := sim.New(77)
	for i := range 100 {
		a.Schedule(sim.Time(i%7), r, 0, 0, 0)
	}
	a.RunUntil(1000)
	if x, y := draws(a, 8), draws(b, 8); !slices.Equal(x, y) {
		t.Error("running events changed the random sequence")
	}
}

type nop struct{ n int }

func (h *nop) HandleEvent(sim.Event) { h.n++ }

func TestScheduleAndRunUntilAllocateNothing(t *testing.T) {
	cases := []struct {
		name  string
		batch int
	}{
		{"one event", 1},
		{"64 events", 64},
		{"1000 events", 1000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := sim.New(1)
			h := &nop{}
			run := func() {
				for i := range c.batch {
					s.Schedule(sim.Time(i%13), h, uint32(i), uint64(i), 0)
				}
				s.RunUntil(s.Now() + 100)
			}
			run() // grow the queue to its steady-state size
			if allocs := testing.AllocsPerRun(100, run); allocs != 0 {
				t.Errorf("Schedule/RunUntil: %v allocations per run, want 0", allocs)
			}
			// One warm-up call, then AllocsPerRun's own warm-up and 100 runs.
			if want := 102 * c.batch; h.n != want {
				t.Errorf("handler ran %d times, want %d", h.n, want)
			}
		})
	}
}

func TestStepAndAdvanceAllocateNothing(t *testing.T) {
	s := sim.New(1)
	h := &nop{}
	run := func() {
		s.Schedule(1, h, 0, 0, 0)
		s.Schedule(2, h, 0, 0, 0)
		s.Step()
		s.Advance(5)
	}
	run()
	if allocs := testing.AllocsPerRun(100, run); allocs != 0 {
		t.Errorf("Step/Advance: %v allocations per run, want 0", allocs)
	}
}

func BenchmarkScheduleRun(b *testing.B) {
	s := sim.New(1)
	h := &nop{}
	const batch = 64
	b.ReportAllocs()
	for b.Loop() {
		for i := range batch {
			s.Schedule(sim.Time(i*7%batch), h, uint32(i), 0, 0)
		}
		s.RunUntil(s.Now() + batch)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/event")
}
