package wait

import (
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 1_000_000 // 1 ms of virtual time: past every deadline the tests give

// prompt is how soon after the completion lands a poll loop must notice it: a
// cache miss and a cpu_relax or two.
const prompt sim.Time = 500

// copyJob submits a 4 KiB copy, which takes the device a few µs.
func copyJob(t *testing.T, r *ringrig.Rig) {
	src := r.Buffer(t, make([]byte, 4096))
	dst := r.Buffer(t, make([]byte, 4096))
	r.Submit(sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: 4096})
}

func registerReads(evs []trace.Event) []trace.Event { return check.Find(evs, trace.RegRead) }

func TestSeesTheCompletion(t *testing.T) {
	r := ringrig.Up(t, host.Config{}, 8)
	copyJob(t, r)
	mark := r.Mark()
	var ok bool
	var back sim.Time
	r.Do("WaitPhase", budget, func() {
		ok = WaitPhase(r.CPU, r.CQ, 1, r.M.Now()+100_000)
		back = r.M.Now()
	})
	evs := r.Since(mark)
	if reads := registerReads(evs); len(reads) > 0 {
		r.Fatalf("WaitPhase read device registers %d times; each read is a non-posted round trip that stalls the CPU (1 µs here). "+
			"Poll the CQ entry in host memory instead. The first:\n%s", len(reads), check.Lines(reads[:1]))
	}
	post := check.Find(evs, trace.CQPost)
	if !ok {
		r.Fatalf("WaitPhase never saw the completion: the device posted it into slot 0 with phase 1 (%d posts), yet WaitPhase returned false.", len(post))
	}
	if len(post) == 0 {
		r.Fatalf("WaitPhase returned true before the device wrote the completion: slot 0 was still zeroed (phase 0), not phase 1.")
	}
	if late := back - post[0].Time; late > prompt {
		r.Fatalf("WaitPhase returned %d ns after the completion landed; a poll loop notices within a few hundred ns. Does it rest too long between looks?", late)
	}
}

// TestIgnoresAStaleEntry: after one lap, slot 0 holds last lap's entry with
// phase 1; the next completion in that slot carries phase 0.
func TestIgnoresAStaleEntry(t *testing.T) {
	const size = 4
	r := ringrig.Up(t, host.Config{}, size)
	rd := ringrig.NewReader()
	for range size {
		r.Submit(sacc.Descriptor{Opcode: sacc.OpNOP})
		if !r.Until(50_000, 200, func() bool { _, ok := rd.Next(r); return ok }) {
			t.Fatal("check: a NOP did not complete")
		}
		r.Regs.Writel(sacc.RegCQHead, rd.Head)
	}
	copyJob(t, r)
	mark := r.Mark()
	var ok bool
	var back sim.Time
	r.Do("WaitPhase", budget, func() {
		ok = WaitPhase(r.CPU, r.CQ, 0, r.M.Now()+100_000)
		back = r.M.Now()
	})
	post := check.Find(r.Since(mark), trace.CQPost)
	switch {
	case len(post) == 0 || back < post[0].Time:
		r.Fatalf("WaitPhase(slot 0, phase 0) returned %v before the device wrote the new entry: slot 0 still held last lap's entry, "+
			"phase 1. It returned before the device wrote anything new.", ok)
	case !ok:
		r.Fatalf("WaitPhase(slot 0, phase 0) never saw the completion: the device wrote phase 0 into slot 0, yet it returned false.")
	}
}

func TestGivesUpAtTheDeadline(t *testing.T) {
	r := ringrig.Up(t, host.Config{}, 8)
	deadline := r.M.Now() + 20_000
	var ok bool
	var back sim.Time
	r.Do("WaitPhase", budget, func() {
		ok = WaitPhase(r.CPU, r.CQ, 1, deadline)
		back = r.M.Now()
	})
	switch {
	case ok:
		r.Fatalf("Nothing was submitted, so slot 0 stays zeroed (phase 0), yet WaitPhase(slot 0, phase 1) returned true.")
	case back < deadline:
		r.Fatalf("WaitPhase gave up before the deadline: it returned at t=%d, the deadline was t=%d.", back, deadline)
	case back > deadline+prompt:
		r.Fatalf("WaitPhase returned false %d ns after the deadline; check the clock on every look.", back-deadline)
	}
}
