package cqhead

import (
	"fmt"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 1_000_000 // one call of Consumed needs a few µs at most

// TestManyLapsWithoutAStall runs forty jobs through 8-entry rings, keeping as
// many in flight as the SQ allows. The harness reads each batch of completions
// and calls Consumed; the device must never stall for want of CQ slots.
func TestManyLapsWithoutAStall(t *testing.T) {
	const size, jobs = 8, 40
	r := ringrig.Up(t, host.Config{}, size)
	c := &Consumer{Size: size}
	rd := ringrig.NewReader()
	mark := r.Mark()
	sent, done, inflight := 0, 0, 0
	for done < jobs {
		for inflight < size-1 && sent < jobs {
			r.Submit(sacc.Descriptor{Opcode: sacc.OpNOP})
			sent++
			inflight++
		}
		n := uint32(0)
		r.Until(50_000, 200, func() bool {
			for {
				if _, ok := rd.Next(r); !ok {
					return n > 0
				}
				n++
			}
		})
		if n == 0 {
			break
		}
		done += int(n)
		inflight -= int(n)
		before := c.Head
		var err error
		call := r.Mark()
		r.Do(fmt.Sprintf("Consumed(regs, %d)", n), budget, func() { err = c.Consumed(r.Regs, n) })
		if err != nil {
			r.Fatalf("Consumed(regs, %d) returned an error: %v", n, err)
		}
		if want := (before + n) % size; c.Head != want {
			wrap := ""
			if c.Head >= size {
				wrap = fmt.Sprintf(" A head of %d is out of range: the device would halt with error 5.", c.Head)
			}
			r.Fatalf("After Consumed(regs, %d) with Head %d on a %d-entry CQ, Head is %d; want %d: the slot after the last one read, wrapping after %d.%s",
				n, before, size, c.Head, want, size-1, wrap)
		}
		var heads []uint32
		for _, ev := range check.Find(r.Since(call), trace.RegWrite) {
			if ev.Args[0] == sacc.RegCQHead || ev.Args[0] == sacc.RegCQHeadDB {
				heads = append(heads, uint32(ev.Args[2]))
			}
		}
		if len(heads) > 0 {
			if last := heads[len(heads)-1]; last != rd.Head {
				r.Fatalf("Consumed(regs, %d) with Head %d wrote CQ_HEAD = %v, but the driver had read up to slot %d: "+
					"%d is not the slot you will read next.", n, before, heads, rd.Head, last)
			}
		}
	}
	evs := r.Since(mark)
	if halt := check.Find(evs, trace.DeviceError); len(halt) > 0 {
		r.Fatalf("The device halted with error %#x: a CQ_HEAD value was out of range. CQ_HEAD is a slot number, 0 to %d.", halt[0].Args[0], size-1)
	}
	var heads []uint32
	for _, ev := range check.Find(evs, trace.RegWrite) {
		if ev.Args[0] == sacc.RegCQHead || ev.Args[0] == sacc.RegCQHeadDB {
			heads = append(heads, uint32(ev.Args[2]))
		}
	}
	if done < jobs {
		full := check.Find(evs, trace.CQFull)
		what := ""
		if len(full) > 0 {
			what = fmt.Sprintf(" The device reported %s: its CQ was full.", strings.TrimSpace(full[len(full)-1].String()))
		}
		never := ""
		if len(heads) == 0 {
			never = " CQ_HEAD was never written, so the device still believes every slot it wrote is unread."
		}
		r.Fatalf("%d of %d jobs completed, then the device stopped (CQ tail %d, CQ_HEAD %d as the device knows it).%s%s (§7.3)",
			done, jobs, r.State().CQTail, r.State().CQHead, what, never)
	}
}

// TestNothingConsumedWritesNothing: Consumed(regs, 0) is not a reason to touch
// the device.
func TestNothingConsumedWritesNothing(t *testing.T) {
	r := ringrig.Up(t, host.Config{}, 8)
	c := &Consumer{Size: 8, Head: 5}
	mark := r.Mark()
	var err error
	r.Do("Consumed(regs, 0)", budget, func() { err = c.Consumed(r.Regs, 0) })
	if err != nil {
		r.Fatalf("Consumed(regs, 0) returned an error: %v", err)
	}
	if c.Head != 5 {
		r.Fatalf("Consumed(regs, 0) moved Head from 5 to %d.", c.Head)
	}
	if w := check.Find(r.Since(mark), trace.RegWrite); len(w) > 0 {
		r.Fatalf("Consumed(regs, 0) wrote a register; with nothing read there is nothing to tell the device:\n%s", check.Lines(w))
	}
}
