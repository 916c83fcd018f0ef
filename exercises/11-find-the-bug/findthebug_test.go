package findthebug

import (
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 5_000_000

const size = 8

func nops(first, n int) []sacc.Descriptor {
	out := make([]sacc.Descriptor, n)
	for i := range out {
		out[i] = sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: uint32(0x100 + first + i)}
	}
	return out
}

// stream pushes jobs through the driver as fast as Submit takes them, reaping in
// between, and stops when all are done or nothing has moved for 100 µs.
func stream(t *testing.T, cfg host.Config, jobs int) {
	r := ringrig.Up(t, cfg, size)
	q := &Queue{SQ: r.SQ, CQ: r.CQ, Size: size, Phase: 1}
	var got []sacc.Completion
	mark := r.Mark()
	stalled := false
	r.Do("the driver", budget, func() {
		sent := 0
		last := r.M.Now()
		for len(got) < jobs {
			if sent < jobs {
				sent += q.Submit(r.CPU, r.Regs, nops(sent, jobs-sent))
			}
			if q.Reap(r.CPU, r.Regs, func(c sacc.Completion) { got = append(got, c) }) > 0 {
				last = r.M.Now()
				continue
			}
			if r.M.Now()-last > 100_000 {
				stalled = true
				return
			}
			r.CPU.Relax()
		}
	})
	evs := r.Since(mark)
	if halt := check.Find(evs, trace.DeviceError); len(halt) > 0 {
		r.Fatalf("The device halted with error %#x after %d of %d jobs completed.", halt[0].Args[0], len(got), jobs)
	}
	if stalled {
		r.Fatalf("After %d of %d jobs completed, the driver has %d in flight (q.InFlight), the device is idle, and nothing has "+
			"happened for 100 µs: those jobs will never complete. The last doorbell and what the device did next:\n%s"+
			"What does the device make of that doorbell? (docs/SPEC.md §5.1, §7.3)",
			len(got), jobs, q.InFlight, check.Lines(aroundLastDoorbell(evs)))
	}
	for i, c := range got {
		if want := uint32(0x100 + i); c.ReqID != want || c.Status != sacc.StatusOK {
			r.Fatalf("Completion %d is %+v; want req_id %#x, status OK: every job once, in order.", i, c, want)
		}
	}
	if len(got) != jobs {
		r.Fatalf("%d completions came back for %d jobs.", len(got), jobs)
	}
}

// aroundLastDoorbell is the last SQ_TAIL write, the few events before it, and
// what followed it.
func aroundLastDoorbell(evs []trace.Event) []trace.Event {
	last := -1
	for i, ev := range evs {
		if ev.Kind == trace.RegWrite && ev.Args[0] == sacc.RegSQTail {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	return evs[max(0, last-2):min(len(evs), last+4)]
}

func TestAShortRun(t *testing.T) {
	stream(t, host.Config{}, 5)
}

func TestAStream(t *testing.T) {
	stream(t, host.Config{}, 40)
}

func TestAStreamOnARM64(t *testing.T) {
	stream(t, host.Config{Machine: machine.Config{Seed: 2}, CPU: cpu.Config{Arch: cpu.ARM64}}, 40)
}

// TestSubmitTakesWhatFits: an empty ring of 8 takes 7, and then nothing until a
// completion is reaped.
func TestSubmitTakesWhatFits(t *testing.T) {
	r := ringrig.Up(t, host.Config{}, size)
	q := &Queue{SQ: r.SQ, CQ: r.CQ, Size: size, Phase: 1}
	var first, second int
	r.Do("Submit", budget, func() {
		first = q.Submit(r.CPU, r.Regs, nops(0, 20))
		second = q.Submit(r.CPU, r.Regs, nops(first, 20-first))
	})
	if first != size-1 || second != 0 {
		r.Fatalf("On an empty ring of %d slots, Submit of 20 jobs took %d, and a second Submit took %d more; want %d and 0: "+
			"the ring holds up to Size − 1 in flight, and no more.", size, first, second, size-1)
	}
}
