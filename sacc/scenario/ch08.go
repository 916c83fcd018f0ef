package scenario

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Chapter 08, Interrupts: MSI-X, what a masked vector does, IRQ_STATUS and its
// acknowledgement, and what an interrupt costs next to polling.

var _ = register(Scenario{Chapter: 8, Primary: true, Name: "interrupts",
	Summary: "MSI-X at work: the vector table, polling against an interrupt for the same job, a masked vector and its PBA bit, one interrupt for a batch",
	Quirks:  []quirk.Quirk{quirk.VectorLeftMasked, quirk.DrainThenAck, quirk.AckWithoutReadback},
	Run:     Interrupts})

// ch08Length is the size of the copy timed both ways.
const ch08Length = 4096

// ch08RaceLength is a copy whose completion lands inside the interrupt handler
// that runs for the NOP before it, under the default costs (the length the
// irq-race scenario uses too).
const ch08RaceLength = raceLength

// Interrupts boots the driver in interrupt mode and shows, in order: the MSI-X
// table the kernel programmed; the same copy completed by polling and by an
// interrupt; a masked vector leaving its bit in the PBA until it is unmasked;
// and a batch of jobs that needs fewer interrupts than jobs.
func Interrupts(m *machine.Machine, env *Env) error {
	cfg := host.Config{Machine: m.Config(), Driver: driver.Config{RingSize: 8, Interrupts: true, Timeout: 100_000}}
	h, err := boot(m, env, cfg)
	if err != nil {
		return err
	}
	dev, pd, c := h.Dev, h.Dev.PCI(), h.CPU
	bar1 := pd.BAR[sacc.MSIXTableBAR].Start
	for v := range sacc.MSIXVectors {
		e := bar1 + uint64(v*sacc.MSIXEntrySize)
		fmt.Fprintf(env.Log, "MSI-X entry %d (BAR1 %#x): address %#x, data %#x, control %#x\n", v, e,
			uint64(c.Readl(e+sacc.MSIXEntryAddrHi))<<32|uint64(c.Readl(e+sacc.MSIXEntryAddrLo)),
			c.Readl(e+sacc.MSIXEntryData), c.Readl(e+sacc.MSIXEntryControl))
	}

	src, err := kernelBuffer(h, make([]byte, ch08Length))
	if err != nil {
		return err
	}
	dst, err := kernelBuffer(h, make([]byte, ch08Length))
	if err != nil {
		return err
	}
	posts := ch06Record(m, trace.CQPost, trace.IRQEntry)
	defer posts.stop()

	// 1. Polling: no interrupt flag; the CPU looks at the CQ until the entry is there.
	r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: ch08Length}
	if err := dev.Submit(r); err != nil {
		return err
	}
	looks := 0
	for !r.Done && m.Now()-r.Submitted < cfg.Driver.Timeout {
		looks++
		if dev.Reap() == 0 {
			c.Relax()
		}
	}
	if !r.Done {
		ch05TellStuck(env, h, r, driver.ErrTimeout)
		return nil
	}
	posted := ch08LastPost(posts, r.Submitted)
	fmt.Fprintf(env.Log, "polling: the device posted %d ns after the doorbell, the CPU saw it %d ns later, after %d looks at the CQ; the CPU did nothing else\n",
		posted-r.Submitted, r.Completed-posted, looks)

	// 2. The same job with the interrupt flag: the CPU halts until the MSI.
	r = &driver.Request{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: ch08Length, IRQ: true}
	irqs := dev.Stats.Interrupts
	if err := dev.Do(r); err != nil {
		ch05TellStuck(env, h, r, err)
		return nil
	}
	posted = ch08LastPost(posts, r.Submitted)
	fmt.Fprintf(env.Log, "interrupt: the device posted %d ns after the doorbell, the handler reaped it %d ns later (%d interrupt); the CPU was free meanwhile\n",
		posted-r.Submitted, r.Completed-posted, dev.Stats.Interrupts-irqs)

	// 3. Mask vector 0 through its vector-control word, as the kernel does when
	// it masks an MSI-X interrupt, and run a job.
	ctl := bar1 + sacc.MSIXEntryControl // entry 0
	c.Writel(ctl, sacc.MSIXEntryMasked)
	r = &driver.Request{Opcode: sacc.OpNOP, IRQ: true}
	if err := dev.Submit(r); err != nil {
		return err
	}
	c.Delay(10_000)
	regs, err := pd.IOMap(0)
	if err != nil {
		return err
	}
	pba := c.Readl(bar1 + sacc.MSIXPBAOffset)
	fmt.Fprintf(env.Log, "vector 0 masked: 10 µs after the doorbell the completion is posted but no message went out: PBA %#x, IRQ_STATUS %#x, the driver still waiting: %v\n",
		pba, regs.Readl(sacc.RegIRQStatus), !r.Done)
	unmasked := m.Now()
	c.Writel(ctl, 0)
	if err := dev.Wait(r); err != nil {
		ch05TellStuck(env, h, r, err)
		return nil
	}
	fmt.Fprintf(env.Log, "unmasked: the pending message went out at once; the handler ran and reaped the job %d ns after the unmask; PBA now %#x\n",
		r.Completed-unmasked, c.Readl(bar1+sacc.MSIXPBAOffset))

	// 4. Two jobs in one doorbell, both asking for an interrupt. The copy's
	// completion is posted while the NOP's handler runs, while its IRQ_ACK is
	// still on the wire: IRQ_STATUS is still set, so the device sends nothing for
	// it (§9). The handler's read-back waits for the acknowledgement to land, so
	// its drain finds the copy. One that drains first, then acknowledges, clears
	// the only trace of it; one that drains with no read-back looks too early.
	a := &driver.Request{Opcode: sacc.OpNOP, IRQ: true}
	b := &driver.Request{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: ch08RaceLength, IRQ: true}
	irqs, empty := dev.Stats.Interrupts, dev.Stats.SpuriousInterrupts
	if _, err := dev.SubmitBatch([]*driver.Request{a, b}); err != nil {
		return err
	}
	if err := dev.Wait(b); err != nil {
		ch05TellStuck(env, h, b, err)
		return nil
	}
	c.Delay(5_000) // let any message still on the wire arrive
	fmt.Fprintf(env.Log, "a NOP and a %d-byte copy in one doorbell, both asking for an interrupt: the copy was posted while the NOP's handler ran, its IRQ_ACK still on the wire; the read-back waited for the ack to land and the drain found the copy; %d interrupts, %d of them with nothing left to do\n",
		ch08RaceLength, dev.Stats.Interrupts-irqs, dev.Stats.SpuriousInterrupts-empty)
	count, name := h.K.IRQCount(ch08Vector(pd))
	fmt.Fprintf(env.Log, "/proc/interrupts: %s %d\n", name, count)
	return nil
}

// ch08LastPost is when the device posted its latest completion after t.
func ch08LastPost(l *ch06Log, t sim.Time) sim.Time {
	var at sim.Time
	for _, ev := range l.evs {
		if ev.Kind == trace.CQPost && ev.Time >= t {
			at = ev.Time
		}
	}
	return at
}

// ch08Vector is the CPU vector of the completion interrupt.
func ch08Vector(pd *kernel.PCIDev) uint8 {
	v, _ := pd.IRQVector(sacc.MSIXVectorComplete)
	return v
}
