package irqreadback

import (
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 2_000_000

// call is one run of the learner's Handle: what it did, in program order. The
// register writes are posted and land after the CPU has moved on, so the order
// is taken where Handle issues them, not where the device sees them.
type call struct {
	ops      []op
	returned int
	reaped   int // what reap returned in all
}

// op is one thing Handle did: an IRQ_ACK write, a register read, or a reap.
type op uint8

const (
	opAck op = iota + 1
	opRead
	opReap
)

// recRegs passes Handle's register accesses on and records them in program order.
type recRegs struct {
	r *rig
	c *call
}

func (x recRegs) Writel(off uint32, v uint32) {
	if off == sacc.RegIRQAck && v&sacc.IRQCompletion != 0 {
		x.c.ops = append(x.c.ops, opAck)
	}
	x.r.Regs.Writel(off, v)
}

func (x recRegs) Readl(off uint32) uint32 {
	x.c.ops = append(x.c.ops, opRead)
	return x.r.Regs.Readl(off)
}

// rig is a running device with MSI-X on and the learner's Handle installed as
// the handler of vector 0, with a reap that reads the CQ through the CPU.
type rig struct {
	*ringrig.Rig
	head  uint32
	phase uint8
	done  map[uint32]bool
	calls []*call
}

func setUp(t *testing.T) *rig {
	r := &rig{Rig: ringrig.Up(t, host.Config{}, 8), phase: 1, done: map[uint32]bool{}}
	if _, err := r.PDev.AllocIRQVectors(sacc.MSIXVectors, sacc.MSIXVectors); err != nil {
		t.Fatalf("check: pci_alloc_irq_vectors: %v", err)
	}
	handler := func(uint8, any) kernel.IRQReturn {
		c := &call{}
		r.calls = append(r.calls, c)
		c.returned = Handle(recRegs{r, c}, func() int {
			c.ops = append(c.ops, opReap)
			n := r.reap()
			c.reaped += n
			return n
		})
		return kernel.IRQHandled
	}
	if err := r.PDev.RequestIRQ(sacc.MSIXVectorComplete, handler, "sacc-cq", nil); err != nil {
		t.Fatalf("check: request_irq: %v", err)
	}
	return r
}

// reap is a correct reaper: phase first, rmb, body; CQ_HEAD at the end.
func (r *rig) reap() int {
	c, n := r.CPU, 0
	for {
		slot := r.CQ + uint64(r.head)*sacc.CompletionSize
		if uint8(c.Load16(slot+sacc.CplPhaseOff)&sacc.CplPhaseBit) != r.phase {
			break
		}
		c.RMB()
		r.done[c.Load32(slot+sacc.CplReqIDOff)] = true
		n++
		if r.head++; r.head == r.Size {
			r.head, r.phase = 0, r.phase^1
		}
	}
	if n > 0 {
		r.Regs.Writel(sacc.RegCQHead, r.head)
	}
	return n
}

// checkOrder holds every call of Handle to the rule: its last look at the CQ
// comes after its last IRQ_ACK, with a register read between the two.
func (r *rig) checkOrder() {
	for i, c := range r.calls {
		if c.returned != c.reaped {
			r.Fatalf("Call %d of Handle returned %d, but reap consumed %d completions during it: return what reap found, "+
				"all of it.", i+1, c.returned, c.reaped)
		}
		lastAck, lastReap := -1, -1
		for j, o := range c.ops {
			switch o {
			case opAck:
				lastAck = j
			case opReap:
				lastReap = j
			}
		}
		if lastAck < 0 {
			r.Fatalf("Call %d of Handle never acknowledged the interrupt: no IRQ_ACK write with bit 0 set. Until it is written, "+
				"IRQ_STATUS stays set and the device sends no more interrupts (§9).", i+1)
		}
		if lastReap < 0 {
			r.Fatalf("Call %d of Handle acknowledged the interrupt but reaped nothing: it must call reap.", i+1)
		}
		if lastReap < lastAck {
			r.Fatalf("Call %d of Handle looked at the CQ for the last time before its IRQ_ACK: a completion that lands "+
				"between that look and the acknowledgement finds IRQ_STATUS set, raises nothing, and is stranded when the "+
				"acknowledgement clears the bit (§9). The last look at the CQ must come after the acknowledgement.", i+1)
		}
		read := false
		for _, o := range c.ops[lastAck+1 : lastReap] {
			read = read || o == opRead
		}
		if !read {
			r.Fatalf("Call %d of Handle wrote IRQ_ACK and looked at the CQ after it with no register read between "+
				"the two. IRQ_ACK is a posted write: it may still be on its way to the device while you look, and a completion "+
				"that lands before it arrives is stranded. Read a register back (IRQ_STATUS, say) after the acknowledgement "+
				"and before the last look: a read cannot overtake the write before it.", i+1)
		}
	}
}

// TestOneJob: one job asking for an interrupt is reaped by the handler, and the
// interrupt is acknowledged.
func TestOneJob(t *testing.T) {
	r := setUp(t)
	mark := r.Mark()
	r.Do("Handle", budget, func() {
		id := r.Submit(sacc.Descriptor{Opcode: sacc.OpNOP, Flags: sacc.FlagInterrupt})
		r.Until(50_000, 1000, func() bool { return r.done[id] })
	})
	evs := r.Since(mark)
	switch {
	case len(r.calls) == 0:
		t.Fatalf("check: no interrupt reached the handler:\n%s", check.Lines(evs))
	case len(r.done) == 0:
		r.Fatalf("The interrupt came and Handle ran, but it reaped nothing: the completion is still waiting in the CQ. Handle must call reap.")
	case r.State().IRQStatus&sacc.IRQCompletion != 0:
		r.Fatalf("Handle reaped the completion, but IRQ_STATUS is still %#x: the interrupt was never acknowledged, "+
			"so the device will send no more interrupts (§9). Write IRQ_ACK.", r.State().IRQStatus)
	}
	r.checkOrder()
}

// TestNoLostCompletion runs the race of §9 for many copy lengths: a NOP and a
// copy in one doorbell, both asking for an interrupt, so that the copy's
// completion lands at every moment of the handler's run for the NOP.
func TestNoLostCompletion(t *testing.T) {
	for length := uint32(64); length <= 4096; length += 32 {
		r := setUp(t)
		src := r.Buffer(t, make([]byte, length))
		dst := r.Buffer(t, make([]byte, length))
		mark := r.Mark()
		var a, b uint32
		r.Do(fmt.Sprintf("Handle (copy of %d bytes)", length), budget, func() {
			a = r.NextID
			r.Put(r.Tail, sacc.Descriptor{Opcode: sacc.OpNOP, Flags: sacc.FlagInterrupt, ReqID: a})
			b = a + 1
			r.Put(r.Tail+1, sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: length, Flags: sacc.FlagInterrupt, ReqID: b})
			r.Tail, r.NextID = r.Tail+2, r.NextID+2
			r.Regs.Writel(sacc.RegSQTail, r.Tail)
			r.Until(200_000, 1000, func() bool { return r.done[b] })
		})
		if !r.done[a] || !r.done[b] {
			evs := r.Since(mark)
			st := r.State()
			posts := check.Find(evs, trace.CQPost)
			switch {
			case len(r.done) == 0 && len(r.calls) > 0:
				r.Fatalf("The interrupt came and Handle ran, but it reaped nothing. Handle must call reap.")
			case st.IRQStatus&sacc.IRQCompletion != 0:
				r.Fatalf("IRQ_STATUS is still %#x after %d interrupts: the interrupt was never acknowledged, so the device sends no more (§9).",
					st.IRQStatus, len(r.calls))
			case len(posts) == 2 && r.done[a]:
				r.Fatalf("The copy of %d bytes (req_id %d) was posted at t=%d, while Handle ran for the NOP's interrupt, after the "+
					"handler's last look at the CQ. IRQ_STATUS was still set, so the device sent nothing for it; then the handler's "+
					"IRQ_ACK cleared the bit. No interrupt will ever come for it: IRQ_STATUS %#x, PBA %#x, %d interrupts (§9).",
					length, b, posts[1].Time, st.IRQStatus, st.PBA, len(r.calls))
			}
			r.Fatalf("With a copy of %d bytes, jobs done: NOP %v, copy %v; %d completions posted, %d interrupts handled.",
				length, r.done[a], r.done[b], len(posts), len(r.calls))
		}
		r.checkOrder()
	}
}
