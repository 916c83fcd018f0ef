// Package kernel is the host operating system a driver runs on, reduced to the
// services a PCI driver uses and named after Linux so that what a learner reads
// here transfers: a firmware step that enumerates the bus and assigns BARs, a PCI
// core that matches drivers (pci_enable_device, pci_request_regions, pci_iomap and
// pci_iounmap, pci_set_master), MSI-X vectors and request_irq, the DMA API
// (dma_set_mask_and_coherent, dma_alloc_coherent, dma_map_single, dma_map_sg,
// dma_sync_*) with an IOMMU domain behind it, a dmesg log, processes with address
// spaces, system calls, mmap and pin_user_pages. Fault injection after Linux's
// fail_function makes any step of a probe fail on demand, so that a driver's
// unwinding can be tested.
//
// Everything the kernel does to the hardware goes through the CPU's operations,
// so it costs virtual time and is ordered by the CPU's memory model like any code.
package kernel

import (
	"fmt"
	"io"
	"strings"

	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/sim"
)

// Config chooses how the kernel boots.
type Config struct {
	IOMMU bool // put devices behind the IOMMU (DMA addresses are IOVAs)
	// LazyUnmap defers IOTLB invalidation after dma_unmap to a batch flush, as
	// Linux's iommu.strict=0 does: faster, and a window in which the device can
	// still reach memory that was unmapped.
	LazyUnmap bool
	Quirks    quirk.Set
}

// Kernel is the running host OS.
type Kernel struct {
	CPU *cpu.CPU
	M   *machine.Machine
	cfg Config

	log   []LogLine
	mm    pageAllocator
	pci   []*PCIDev
	drv   []*PCIDriver
	irqs  [256]irqAction
	nextV uint8
	dom   *domain // the IOMMU domain devices are attached to, when the IOMMU is on
	procs []*Process
	files map[string]FileOps
	// faults are the armed fault injections (InjectFault).
	faults []faultPoint
	// work is the system workqueue: items queued and not run yet, in order.
	work   []*Work
	inWork bool

	Stats Stats
}

// Stats counts kernel work, for comparing the kernel path with bypass.
type Stats struct {
	Syscalls       uint64
	KernelCrossing uint64 // entries into the kernel: system calls and interrupts
	IRQs           uint64
	IOTLBFlushes   uint64
}

// LogLine is one dmesg line.
type LogLine struct {
	Time sim.Time
	Text string
}

// Boot starts the kernel on c: the firmware enumerates PCI and assigns BARs, the
// memory allocator takes RAM above the first megabyte, and the IOMMU (if asked for)
// gets its page tables and fault log.
func Boot(c *cpu.CPU, cfg Config) (*Kernel, error) {
	k := &Kernel{CPU: c, M: c.Machine(), cfg: cfg, nextV: firstVector, files: map[string]FileOps{}}
	k.mm.init(k.M.RAM().Size())
	k.Printk("Linux version 6.12.0-saccbook (saccbook) #1 SMP")
	k.Printk("Memory: %dK available, CPU model %s%s", k.M.RAM().Size()>>10, c.Arch(), map[bool]string{true: ", non-coherent DMA"}[c.NonCoherent()])
	c.SetIRQHandler(k.dispatchIRQ)
	c.SetIRQReturn(k.runWork) // back in process context: the worker runs
	if cfg.IOMMU {
		d, err := k.newDomain()
		if err != nil {
			return nil, fmt.Errorf("iommu: %w", err)
		}
		k.dom = d
		k.Printk("DMAR: IOMMU enabled, %s invalidation", map[bool]string{true: "lazy", false: "strict"}[cfg.LazyUnmap])
	}
	if err := k.enumerate(); err != nil {
		return nil, err
	}
	c.EnableIRQs()
	return k, nil
}

// Printk adds a line to the kernel log.
func (k *Kernel) Printk(format string, a ...any) {
	k.log = append(k.log, LogLine{k.M.Now(), fmt.Sprintf(format, a...)})
}

// Log returns the kernel log.
func (k *Kernel) Log() []LogLine { return k.log }

// Dmesg writes the log as dmesg prints it: "[seconds.micros] text".
func (k *Kernel) Dmesg(w io.Writer) error {
	var b strings.Builder
	for _, l := range k.log {
		fmt.Fprintf(&b, "[%5d.%06d] %s\n", l.Time/1e9, l.Time%1e9/1e3, l.Text)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Config is how the kernel was booted.
func (k *Kernel) Config() Config { return k.cfg }
