package trace_test

import (
	"testing"

	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// record runs emit on a fresh tracer and returns what it recorded.
func record(emit func(s *sim.Sim, tr *trace.Tracer)) []trace.Event {
	s := sim.New(1)
	tr := trace.NewTracer(s)
	var buf trace.Buffer
	tr.Attach(&buf)
	emit(s, tr)
	return buf.Events
}

// job is a short run: a doorbell, a fetch, a completion. pc is the source the CPU
// stamps on the doorbell's register write; bug makes the device stall instead of
// posting the completion.
func job(pc uintptr, bug bool) func(*sim.Sim, *trace.Tracer) {
	return func(s *sim.Sim, tr *trace.Tracer) {
		tr.SetPC(pc)
		tr.EmitRegWrite(0x1000, 4, 1)
		tr.SetPC(0)
		tr.EmitDoorbell(1, 0)
		s.Advance(100)
		tr.EmitFetch(0, 0x100000)
		s.Advance(800)
		if bug {
			tr.EmitCQFull(0, 0)
			return
		}
		tr.EmitCQPost(0, 1, 0, 1)
		tr.EmitIdle(1)
	}
}

func TestSameRunsDoNotDiffer(t *testing.T) {
	a, b := record(job(0x1234, false)), record(job(0x1234, false))
	if i, ok := trace.FirstDifference(a, b); ok {
		t.Fatalf("identical runs differ at %d", i)
	}
	if i, ok := trace.FirstDifference(nil, nil); ok {
		t.Fatalf("two empty runs differ at %d", i)
	}
}

// TestProgramCounterIsNoDifference: a quirk's helper issues the same store from
// another line of code; the machine cannot tell.
func TestProgramCounterIsNoDifference(t *testing.T) {
	a, b := record(job(0x1234, false)), record(job(0x5678, false))
	if a[0].PC == b[0].PC {
		t.Fatal("the test's runs should differ in the PC of their first event")
	}
	if i, ok := trace.FirstDifference(a, b); ok {
		t.Fatalf("runs that differ only in PC differ at %d", i)
	}
	if !trace.Same(&a[0], &b[0]) {
		t.Fatal("Same compares the PC")
	}
}

func TestFirstDifferenceFindsTheFirst(t *testing.T) {
	with, without := record(job(0, true)), record(job(0, false))
	i, ok := trace.FirstDifference(with, without)
	if !ok || i != 3 || with[i].Kind != trace.CQFull || without[i].Kind != trace.CQPost || with[i].Seq != 4 {
		t.Fatalf("FirstDifference = %d, %v; want 3 (the stall against the completion)", i, ok)
	}
	if j, _ := trace.FirstDifference(without, with); j != i {
		t.Fatalf("the order of the runs matters: %d then %d", i, j)
	}

	// The same kind at another time, or with another argument, differs too.
	later := record(func(s *sim.Sim, tr *trace.Tracer) {
		job(0, false)(s, tr)
		s.Advance(1)
		tr.EmitIdle(1)
	})
	other := record(func(s *sim.Sim, tr *trace.Tracer) {
		job(0, false)(s, tr)
		tr.EmitIdle(2)
	})
	same := record(func(s *sim.Sim, tr *trace.Tracer) {
		job(0, false)(s, tr)
		tr.EmitIdle(1)
	})
	for name, run := range map[string][]trace.Event{"time": later, "argument": other} {
		if i, ok := trace.FirstDifference(same, run); !ok || i != len(without) {
			t.Errorf("another %s: FirstDifference = %d, %v; want %d", name, i, ok, len(without))
		}
	}
}

// TestOneRunEndsFirst: a run that stops early parts from the longer one where
// the longer one does something more.
func TestOneRunEndsFirst(t *testing.T) {
	full := record(job(0, false))
	short := full[:2]
	for _, pair := range [][2][]trace.Event{{short, full}, {full, short}} {
		if i, ok := trace.FirstDifference(pair[0], pair[1]); !ok || i != 2 {
			t.Errorf("FirstDifference of %d and %d events = %d, %v; want 2", len(pair[0]), len(pair[1]), i, ok)
		}
	}
	if i, ok := trace.FirstDifference(nil, full); !ok || i != 0 {
		t.Errorf("an empty run against a full one: %d, %v", i, ok)
	}
}
