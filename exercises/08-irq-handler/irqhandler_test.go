package irqhandler

import (
	"fmt"
	"strings"
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

// rig is a running device with MSI-X on and the learner's Handle installed as the
// handler of vector 0, with a reap that reads the CQ through the CPU.
type rig struct {
	*ringrig.Rig
	head     uint32
	phase    uint8
	done     map[uint32]bool
	handled  int
	reapedBy []int // what each call of Handle returned
	// calls is what each call of Handle did, in order: "ack" (IRQ_ACK
	// written), "read" (a register read), "reap"; with the time reap began.
	calls [][]call
}

// call is one thing Handle did.
type call struct {
	what string
	at   sim.Time
}

// recRegs passes Handle's register accesses on and records them.
type recRegs struct {
	r *rig
}

func (x recRegs) Writel(off uint32, v uint32) {
	if off == sacc.RegIRQAck {
		x.r.note("ack")
	}
	x.r.Regs.Writel(off, v)
}

func (x recRegs) Readl(off uint32) uint32 {
	x.r.note("read")
	return x.r.Regs.Readl(off)
}

func (r *rig) note(what string) {
	r.calls[len(r.calls)-1] = append(r.calls[len(r.calls)-1], call{what, r.CPU.Now()})
}

func setUp(t *testing.T) *rig {
	r := &rig{Rig: ringrig.Up(t, host.Config{}, 8), phase: 1, done: map[uint32]bool{}}
	if _, err := r.PDev.AllocIRQVectors(sacc.MSIXVectors, sacc.MSIXVectors); err != nil {
		t.Fatalf("check: pci_alloc_irq_vectors: %v", err)
	}
	handler := func(uint8, any) kernel.IRQReturn {
		r.handled++
		r.calls = append(r.calls, nil)
		r.reapedBy = append(r.reapedBy, Handle(recRegs{r}, func() int { r.note("reap"); return r.reap() }))
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

// TestOneJob: one job asking for an interrupt is reaped by the handler, and the
// interrupt is acknowledged.
func TestOneJob(t *testing.T) {
	r := setUp(t)
	mark := r.Mark()
	r.Do("Handle", budget, func() {
		id := r.Submit(sacc.Descriptor{Opcode: sacc.OpNOP, Flags: sacc.FlagInterrupt})
		r.Until(50_000, 1000, func() bool { return r.done[id] })
		r.CPU.Delay(r.CPU.Machine().Cost().MMIOWrite) // IRQ_ACK is a posted write: let it land
	})
	evs := r.Since(mark)
	switch {
	case r.handled == 0:
		t.Fatalf("check: no interrupt reached the handler:\n%s", check.Lines(evs))
	case len(r.done) == 0:
		r.Fatalf("The interrupt came and Handle ran, but it reaped nothing: the completion is still waiting in the CQ. Handle must call reap.")
	case r.State().IRQStatus&sacc.IRQCompletion != 0:
		r.Fatalf("Handle reaped the completion, but IRQ_STATUS is still %#x: the interrupt was never acknowledged, "+
			"so the device will send no more interrupts (§9). Write IRQ_ACK.", r.State().IRQStatus)
	case r.reapedBy[0] != 1:
		r.Fatalf("Handle returned %d; reap consumed 1 completion.", r.reapedBy[0])
	}
}

// TestNoLostCompletion runs the race of §9 for many copy lengths: a NOP and a
// copy in one doorbell, both asking for an interrupt. For some length the copy's
// completion lands while the handler runs for the NOP's. A handler that drains,
// then acknowledges, loses it for at least one of them.
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
		if r.done[a] && r.done[b] {
			continue
		}
		evs := r.Since(mark)
		st := r.State()
		posts := check.Find(evs, trace.CQPost)
		switch {
		case len(r.done) == 0 && r.handled > 0:
			r.Fatalf("The interrupt came and Handle ran, but it reaped nothing. Handle must call reap.")
		case st.IRQStatus&sacc.IRQCompletion != 0:
			r.Fatalf("IRQ_STATUS is still %#x after %d interrupts: the interrupt was never acknowledged, so the device sends no more (§9).",
				st.IRQStatus, r.handled)
		case len(posts) == 2 && r.done[a]:
			r.Fatalf("The copy of %d bytes (req_id %d) was posted at t=%d, while Handle ran for the NOP's interrupt (%s). "+
				"%s No interrupt will ever come for it: IRQ_STATUS %#x, PBA %#x, %d interrupts. %s",
				length, b, posts[1].Time, describe(r.calls[0]), mistake(r.calls[0]), st.IRQStatus, st.PBA, r.handled, fix)
		}
		r.Fatalf("With a copy of %d bytes, jobs done: NOP %v, copy %v; %d completions posted, %d interrupts handled.", length, r.done[a], r.done[b], len(posts), r.handled)
	}
}

// fix is what every lost-completion message ends with.
const fix = "Acknowledge, read a register back, then drain (§9)."

// describe says what one call of Handle did, in order.
func describe(cs []call) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, map[string]string{"ack": "IRQ_ACK", "read": "a register read", "reap": "reap"}[c.what])
	}
	if len(parts) == 0 {
		return "it did nothing"
	}
	return "it did: " + strings.Join(parts, ", then ")
}

// mistake names the wrong order a call of Handle used.
func mistake(cs []call) string {
	ack, readAfterAck := -1, false
	for i, c := range cs {
		switch {
		case c.what == "ack" && ack < 0:
			ack = i
		case c.what == "read" && ack >= 0:
			readAfterAck = true
		case c.what == "reap" && ack >= 0 && readAfterAck:
			return "The handler read a register back after IRQ_ACK and drained after that, yet lost it: look at what else it does."
		case c.what == "reap" && ack >= 0:
			return "The handler acknowledged, then drained without reading a register back: the IRQ_ACK is a posted write, " +
				"still on its way to the device when reap looked. The copy found IRQ_STATUS still set, so the device sent nothing for it; " +
				"then the acknowledgement landed and cleared the bit."
		}
	}
	if ack >= 0 {
		return "The handler drained, then acknowledged: the copy was posted after the handler's last look at the CQ and found IRQ_STATUS still set, " +
			"so the device sent nothing for it; then the handler's IRQ_ACK cleared the bit."
	}
	return "The handler never acknowledged."
}
