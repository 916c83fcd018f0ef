package kernel

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/quirk"
)

// Vectors handed to devices, as x86 Linux does above the exception range.
const (
	firstVector = 0x30
	lastVector  = 0xEF
)

// IRQReturn is what a handler says (irqreturn_t).
type IRQReturn bool

const (
	IRQNone    IRQReturn = false
	IRQHandled IRQReturn = true
)

// IRQHandler is an interrupt handler (irq_handler_t).
type IRQHandler func(vector uint8, data any) IRQReturn

type irqAction struct {
	handler IRQHandler
	name    string
	data    any
	count   uint64
}

// AllocIRQVectors is pci_alloc_irq_vectors(dev, min, max, PCI_IRQ_MSIX): it
// programs the device's MSI-X table with interrupt-window messages and enables
// MSI-X. Entries stay masked until RequestIRQ.
func (d *PCIDev) AllocIRQVectors(minVecs, maxVecs int) (int, error) {
	if err := d.k.shouldFail("pci_alloc_irq_vectors"); err != nil {
		return 0, err
	}
	cap := d.FindCapability(sacc.CapIDMSIX)
	if cap == 0 {
		return 0, fmt.Errorf("no MSI-X capability")
	}
	d.msixCap = cap
	ctl := d.ReadConfig16(cap + sacc.CapMSIXControlOff)
	n := min(int(ctl&sacc.MSIXCtrlTableSizeMask)+1, maxVecs)
	if n < minVecs {
		return 0, fmt.Errorf("device has %d MSI-X vectors, need %d", n, minVecs)
	}
	table := d.msixTable()
	if table == nil {
		return 0, fmt.Errorf("MSI-X table BAR is not mapped")
	}
	k := d.k
	for i := range n {
		if k.nextV > lastVector {
			d.vectors = nil // MSI-X stays disabled: nothing was handed out
			return 0, fmt.Errorf("out of interrupt vectors")
		}
		v := k.nextV
		k.nextV++
		d.vectors = append(d.vectors, v)
		off := uint32(i * sacc.MSIXEntrySize)
		table.Writel(off+sacc.MSIXEntryAddrLo, sacc.IntWindowBase)
		table.Writel(off+sacc.MSIXEntryAddrHi, 0)
		table.Writel(off+sacc.MSIXEntryData, uint32(v))
		table.Writel(off+sacc.MSIXEntryControl, sacc.MSIXEntryMasked)
	}
	d.WriteConfig16(cap+sacc.CapMSIXControlOff, ctl|sacc.MSIXCtrlEnable)
	d.Info("enabled %d MSI-X vectors (%#x-%#x)", n, d.vectors[0], d.vectors[n-1])
	return n, nil
}

func (d *PCIDev) msixTable() *IOMem {
	tbl := d.ReadConfig32(d.msixCap + sacc.CapMSIXTableOff)
	r := d.BAR[tbl&7]
	if r.Size == 0 {
		return nil
	}
	return &IOMem{k: d.k, Base: r.Start + uint64(tbl&^7), Size: sacc.MSIXTableSize}
}

// IRQVector is pci_irq_vector: the CPU vector of MSI-X entry i.
func (d *PCIDev) IRQVector(i int) (uint8, error) {
	if i < 0 || i >= len(d.vectors) {
		return 0, fmt.Errorf("MSI-X entry %d not allocated", i)
	}
	return d.vectors[i], nil
}

// RequestIRQ is request_irq for MSI-X entry i: install the handler and unmask
// the entry. A vector that has a handler already is EBUSY (no sharing on MSI-X).
func (d *PCIDev) RequestIRQ(i int, h IRQHandler, name string, data any) error {
	if err := d.k.shouldFail("request_irq"); err != nil {
		return err
	}
	v, err := d.IRQVector(i)
	if err != nil {
		return err
	}
	if d.k.irqs[v].handler != nil {
		return fmt.Errorf("vector %#x is taken by %s: %w", v, d.k.irqs[v].name, EBUSY)
	}
	d.k.irqs[v] = irqAction{handler: h, name: name, data: data}
	if !d.k.cfg.Quirks.Has(quirk.VectorLeftMasked) {
		d.msixTable().Writel(uint32(i*sacc.MSIXEntrySize)+sacc.MSIXEntryControl, 0)
	}
	return nil
}

// FreeIRQ masks entry i and removes its handler.
func (d *PCIDev) FreeIRQ(i int) {
	v, err := d.IRQVector(i)
	if err != nil {
		return
	}
	if t := d.msixTable(); t != nil {
		ctl := uint32(i*sacc.MSIXEntrySize) + sacc.MSIXEntryControl
		t.Writel(ctl, sacc.MSIXEntryMasked)
		// The mask is a posted write: read the entry back so that it has reached
		// the device before the handler goes (Linux's pci_msix_mask does the same).
		t.Readl(ctl)
	}
	d.k.irqs[v] = irqAction{}
}

// FreeIRQVectors disables MSI-X (pci_free_irq_vectors).
func (d *PCIDev) FreeIRQVectors() {
	if d.msixCap != 0 {
		ctl := d.ReadConfig16(d.msixCap + sacc.CapMSIXControlOff)
		d.WriteConfig16(d.msixCap+sacc.CapMSIXControlOff, ctl&^sacc.MSIXCtrlEnable)
	}
	d.vectors = nil
}

// dispatchIRQ is the CPU's interrupt entry: find the handler for the vector.
func (k *Kernel) dispatchIRQ(v uint8) bool {
	k.Stats.IRQs++
	k.Stats.KernelCrossing++
	a := &k.irqs[v]
	if a.handler == nil {
		k.Printk("do_IRQ: no handler for vector %#x", v)
		return false
	}
	a.count++
	return bool(a.handler(v, a.data))
}

// IRQCount is /proc/interrupts for one vector.
func (k *Kernel) IRQCount(v uint8) (count uint64, name string) {
	return k.irqs[v].count, k.irqs[v].name
}
