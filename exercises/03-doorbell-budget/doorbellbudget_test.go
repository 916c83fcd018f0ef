package doorbellbudget

import (
	"fmt"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// budget is the watchdog's: far past any Budget, so only a Feed that never
// returns meets it.
const budget sim.Time = 10_000_000

// rig is a running device on a machine whose register writes trap to the
// hypervisor, with the ring moved on to start at slot start.
type rig struct {
	*ringrig.Rig
	rd       *ringrig.Reader
	reported int // completions reap has reported
	mine     map[uint32]bool
	t        *testing.T
}

func setUp(t *testing.T, size, start uint32) *rig {
	cost := check.Cost(t, fmt.Sprintf("mmio_write_issue=%d", DoorbellCost))
	r := &rig{Rig: ringrig.Up(t, host.Config{Machine: machine.Config{Cost: cost}}, size), rd: ringrig.NewReader(), mine: map[uint32]bool{}, t: t}
	for range start {
		r.Submit(sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 0xFFFF})
		if !r.Until(50_000, 500, func() bool { _, ok := r.rd.Next(r.Rig); return ok }) {
			t.Fatal("check: a NOP did not complete")
		}
		r.give()
	}
	return r
}

// give hands the CQ slots read so far back to the device. The completion side
// is the harness's: its register write reaches the device at no cost to the
// learner's CPU.
func (r *rig) give() {
	r.M.Device().WriteBAR0(sacc.RegCQHead, 4, uint64(r.rd.Head))
}

// reap is the reap Feed is given: one look at the CQ, the cost of a cpu_relax.
func (r *rig) reap() int {
	r.CPU.Relax()
	n := 0
	for {
		c, ok := r.rd.Next(r.Rig)
		if !ok {
			break
		}
		if r.mine[c.ReqID] {
			n++
		}
	}
	if n > 0 {
		r.give()
	}
	r.reported += n
	return n
}

func nops(n int) []sacc.Descriptor {
	out := make([]sacc.Descriptor, n)
	for i := range out {
		out[i] = sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 0x1000 + uint32(i)}
	}
	return out
}

// feed runs the learner's Feed on jobs from a queue at the harness's tail, and
// checks everything the contract says.
func (r *rig) feed(jobs []sacc.Descriptor) {
	for _, j := range jobs {
		r.mine[j.ReqID] = true
	}
	q := &Queue{SQ: r.SQ, Size: r.Size, Tail: r.Tail}
	start := q.Tail
	mark := r.Mark()
	began := r.M.Now()
	var err error
	finished := r.DoWithin("Feed", budget, func() { err = Feed(r.CPU, r.Regs, q, jobs, r.reap) })
	took := r.M.Now() - began
	evs := r.Since(mark)
	bells := ringrig.Doorbells(evs)
	where := fmt.Sprintf("%d jobs through a ring of %d slots, starting at slot %d", len(jobs), r.Size, start)
	if err != nil {
		r.Fatalf("Feed of %s returned an error: %v", where, err)
	}
	defer func() {
		if !finished {
			r.Fatalf("Feed of %s is still running after %s of virtual time; reap has reported %d of the jobs complete, "+
				"and the device has nothing more to do. Does Feed wait for completions it never asked for?",
				where, check.Duration(budget), r.reported)
		}
	}()
	if halt := check.Find(evs, trace.DeviceError); len(halt) > 0 {
		r.Fatalf("Feed of %s: the device halted with error %#x after the doorbells %s. A doorbell value is a slot number, "+
			"0 to %d: the tail wraps to 0 after the last slot (§7.6).", where, halt[0].Args[0], values(bells), r.Size-1)
	}
	// A doorbell that hands over new descriptors with tail == head handed over a
	// ring with every slot full.
	wrote, prev := false, start
	for _, ev := range evs {
		switch {
		case ev.Kind == trace.CPUWrite && ev.Args[0] >= r.SQ && ev.Args[0] < r.SQ+uint64(r.Size)*sacc.DescriptorSize:
			wrote = true
		case ev.Kind == trace.Doorbell:
			if tail, head := uint32(ev.Args[0]), uint32(ev.Args[1]); wrote && tail == head {
				r.Fatalf("Feed of %s: a doorbell moved SQ_TAIL from %d to %d while the device's head was at %d: it handed over a "+
					"ring with every slot full, which the device reads as empty. The jobs in it are lost. At most Size-1 = %d "+
					"descriptors may be in flight (§7.3).", where, prev, tail, head, r.Size-1)
			}
			wrote, prev = false, uint32(ev.Args[0])
		}
	}
	if !finished {
		return // the deferred report says so
	}
	if r.reported != len(jobs) {
		r.Fatalf("Feed of %s returned when reap had reported %d of them complete: it must wait for all of them.", where, r.reported)
	}
	var ran []string
	for _, ev := range check.Find(evs, trace.Descriptor) {
		if r.mine[uint32(ev.Args[0])] {
			ran = append(ran, fmt.Sprintf("%#x", ev.Args[0]))
		}
	}
	var want []string
	for _, j := range jobs {
		want = append(want, fmt.Sprintf("%#x", j.ReqID))
	}
	if strings.Join(ran, " ") != strings.Join(want, " ") {
		r.Fatalf("Feed of %s: the device ran req_ids\n  [%s]\nwant each job once, in order:\n  [%s]",
			where, strings.Join(ran, " "), strings.Join(want, " "))
	}
	if end := (start + uint32(len(jobs))) % r.Size; q.Tail != end || q.InFlight != 0 {
		r.Fatalf("After Feed of %s, q.Tail is %d and q.InFlight %d; want %d and 0.", where, q.Tail, q.InFlight, end)
	}
	r.t.Logf("%s: %s, %d doorbells (budget %s)", where, check.Duration(took), len(bells), check.Duration(Budget(len(jobs))))
	if limit := Budget(len(jobs)); took > limit {
		r.Fatalf("Feed of %s took %s; the budget is %s. It rang the doorbell %d times, and each one costs the CPU %s in the "+
			"hypervisor while the device runs only what it was already given. Hand over as many descriptors per doorbell "+
			"as the ring allows, and ring only when there is something new.", where, check.Duration(took), check.Duration(limit),
			len(bells), check.Duration(DoorbellCost))
	}
}

func values(bells []trace.Event) string {
	var v []string
	for _, b := range bells {
		v = append(v, fmt.Sprint(b.Args[2]))
	}
	return "[" + strings.Join(v, " ") + "]"
}

func TestSixtyFourJobs(t *testing.T) {
	for _, tc := range []struct{ size, start uint32 }{{16, 0}, {16, 11}, {8, 5}} {
		t.Run(fmt.Sprintf("size %d from slot %d", tc.size, tc.start), func(t *testing.T) {
			r := setUp(t, tc.size, tc.start)
			r.feed(nops(64))
		})
	}
}

func TestAFewJobs(t *testing.T) {
	r := setUp(t, 16, 14)
	r.feed(nops(3))
}

func TestNoJobs(t *testing.T) {
	r := setUp(t, 8, 0)
	mark := r.Mark()
	r.feed(nil)
	if bells := ringrig.Doorbells(r.Since(mark)); len(bells) > 0 {
		r.Fatalf("Feed of no jobs rang the doorbell %d times: with nothing new to hand over, a doorbell only costs %s.",
			len(bells), check.Duration(DoorbellCost))
	}
}
