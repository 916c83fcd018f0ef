package scenario

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Chapter 2, "MMIO": the register page of BAR0 through pci_iomap, ioread32 and
// iowrite32 — what each kind of register does with a read and a write, which
// access widths it takes, and what a read costs next to a write — and then the
// driver's probe, counted.

var _ = register(Scenario{
	Chapter: 2, Primary: true, Name: "mmio",
	Summary: "the register page: RO, RW, WO and reserved registers, access widths, a read's round trip against a posted write, the driver's probe counted",
	Quirks:  []quirk.Quirk{quirk.WrongWidth},
	Run:     MMIOTour,
})

// MMIOTour maps BAR0 the way a driver does and pokes its registers one by one.
func MMIOTour(m *machine.Machine, env *Env) error {
	log := env.Log
	h, err := host.BootOn(m, host.Config{Machine: m.Config(), NoDriver: true})
	env.Host = h
	if err != nil {
		return err
	}
	d := h.K.Devices()[0]
	if err := d.EnableDevice(); err != nil {
		return err
	}
	regs, err := d.IOMap(0) // pci_iomap(pdev, 0, 0)
	if err != nil {
		return err
	}
	c := h.CPU
	fmt.Fprintf(log, "pci_iomap: BAR0 is %#x bytes at %#x; register n is at %#x + n\n", regs.Size, regs.Base, regs.Base)

	// A read is a round trip: the CPU waits for the answer.
	t := m.Now()
	magic := regs.Readl(sacc.RegMAGIC)
	fmt.Fprintf(log, "ioread32(MAGIC) = %#x, the CPU waited %d ns for it\n", magic, m.Now()-t)
	fmt.Fprintf(log, "ioread32(VERSION) = %d\n", regs.Readl(sacc.RegVERSION))

	// A write is posted: the CPU moves on at once.
	t = m.Now()
	regs.Writel(sacc.RegSCRATCH, 0xC0FFEE)
	fmt.Fprintf(log, "iowrite32(SCRATCH, 0xc0ffee): the CPU moved on after %d ns\n", m.Now()-t)
	fmt.Fprintf(log, "ioread32(SCRATCH) = %#x (RW: it keeps what was written)\n", regs.Readl(sacc.RegSCRATCH))

	// Read-only, write-only and reserved.
	regs.Writel(sacc.RegMAGIC, 0)
	fmt.Fprintf(log, "iowrite32(MAGIC, 0) is ignored (RO): MAGIC still reads %#x\n", regs.Readl(sacc.RegMAGIC))
	regs.Writel(sacc.RegIRQAck, 0)
	fmt.Fprintf(log, "IRQ_ACK is write-only: it reads %#x\n", regs.Readl(sacc.RegIRQAck))
	regs.Writel(0x80, 0x1234)
	fmt.Fprintf(log, "offset 0x80 is reserved: the write was dropped and it reads %#x\n", regs.Readl(0x80))

	// Widths: 32 bits everywhere, 64 at the two ring bases, nothing else.
	c.Writeq(regs.Base+sacc.RegSQBaseLo, 0x1_2345_6000)
	fmt.Fprintf(log, "a 64-bit write to SQ_BASE: low half %#x, high half %#x\n",
		regs.Readl(sacc.RegSQBaseLo), regs.Readl(sacc.RegSQBaseHi))
	fmt.Fprintf(log, "a 16-bit read of MAGIC is refused: it returns %#x\n", c.Readw(regs.Base+sacc.RegMAGIC))
	c.Writeb(regs.Base+sacc.RegSCRATCH, 0x42)
	fmt.Fprintf(log, "an 8-bit write to SCRATCH is dropped: SCRATCH still reads %#x\n", regs.Readl(sacc.RegSCRATCH))
	regs.Writeq(sacc.RegSQBaseLo, 0) // leave the ring base as power-on

	// Ten of each, back to back.
	t = m.Now()
	for range 10 {
		regs.Writel(sacc.RegSCRATCH, 1)
	}
	writes := m.Now() - t
	t = m.Now()
	for range 10 {
		regs.Readl(sacc.RegSCRATCH)
	}
	fmt.Fprintf(log, "10 writes took %d ns of CPU time; 10 reads took %d ns\n", writes, m.Now()-t)

	// The driver's probe: how much of it is register reads?
	var reads, writesN int
	detach := m.Tracer().Attach(trace.Func(func(ev trace.Event) {
		switch ev.Kind {
		case trace.RegRead:
			reads++
		case trace.RegWrite:
			writesN++
		}
	}))
	t = m.Now()
	drv, err := driver.Register(h.K, driver.Config{RingSize: 8})
	detach()
	if err != nil {
		fmt.Fprintf(log, "the driver's probe failed: %v\n", err)
		return err
	}
	h.Drv, h.Dev = drv, drv.Dev
	fmt.Fprintf(log, "the driver's probe took %d ns: %d register reads (%d ns of waiting) and %d register writes\n",
		m.Now()-t, reads, sim.Time(reads)*m.Cost().MMIORead, writesN)
	return nil
}
