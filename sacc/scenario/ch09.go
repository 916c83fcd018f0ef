package scenario

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
)

// Chapter 09, the IOMMU: the keypad on the garage door.

var _ = register(Scenario{
	Chapter: 9, Primary: true, Name: "iommu",
	Summary: "the IOMMU at work: IOVAs and permissions, IOTLB misses and hits, a hostile DMA stopped and logged, a mapping changed and invalidated",
	Options: []Option{
		{Name: "iommu", Doc: "DMA through the IOMMU", Default: "on", Values: values("on", "off")},
		{Name: "flush", Doc: "when the kernel invalidates the IOTLB after an unmap", Default: "strict", Values: []Value{
			{"strict", "at once"}, {"lazy", "in batches, later"}}},
	},
	Quirks: []quirk.Quirk{quirk.NoIOTLBInvalidate, quirk.IOTLBIgnoresInvalidate},
	Run:    IOMMUTour,
})

var _ = register(Scenario{
	Chapter: 9, Name: "iommu-flush",
	Summary: "strict and lazy IOTLB invalidation compared: flushes, virtual time, and the window in which an unmapped buffer is still reachable",
	Run:     IOMMUFlush,
})

// ch09Secret is what the kernel keeps in a page no device was ever given.
var ch09Secret = []byte("kernel secret: the root password is hunter2")

// IOMMUTour boots a kernel with the device behind the IOMMU and walks through
// what the keypad does: a streaming mapping, the IOTLB warming up, a DMA to an
// address nobody mapped, and a mapping that changes under the IOTLB.
func IOMMUTour(m *machine.Machine, env *Env) error {
	cfg := host.Config{Machine: m.Config(), Driver: driver.Config{RingSize: 8}}
	switch env.Option("iommu", "on") {
	case "on":
		cfg.Kernel.IOMMU = true
	case "off":
	default:
		return fmt.Errorf("iommu=%s: want on or off", env.Option("iommu", ""))
	}
	switch env.Option("flush", "strict") {
	case "strict":
	case "lazy":
		cfg.Kernel.LazyUnmap = true
	default:
		return fmt.Errorf("flush=%s: want strict or lazy", env.Option("flush", ""))
	}
	h, err := boot(m, env, cfg)
	if err != nil {
		return err
	}
	log := env.Log
	on := h.K.IOMMUOn()
	if on {
		mode := map[bool]string{false: "strict", true: "lazy"}[cfg.Kernel.LazyUnmap]
		st := h.M.IOMMU().State()
		fmt.Fprintf(log, "IOMMU on (%s invalidation): PT_ROOT %#x, fault log of %d records\n", mode, st.PTRoot, st.FaultSize)
	} else {
		fmt.Fprintf(log, "IOMMU off: every DMA address is a physical address\n")
	}

	// 1. A streaming mapping: the kernel picks an IOVA and writes the I/O page
	// tables; the device sees only the IOVA.
	pd := h.Dev.PCI()
	const n = 64
	src, err := kernelBuffer(h, bytes.Repeat([]byte{0x11}, n))
	if err != nil {
		return err
	}
	dst, err := kernelBuffer(h, make([]byte, n))
	if err != nil {
		return err
	}
	sd, err := pd.DMAMapSingle(src, n, kernel.DMAToDevice)
	if err != nil {
		return err
	}
	dd, err := pd.DMAMapSingle(dst, n, kernel.DMAFromDevice)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "dma_map_single: src phys %#x -> dma %#x (%s), dst phys %#x -> dma %#x (%s)\n",
		src, sd, ch09Perm(h, sd), dst, dd, ch09Perm(h, dd))

	// 2. The same copy twice: the first one walks the page tables, the second
	// finds every translation in the IOTLB.
	for _, what := range []string{"first copy (IOTLB cold)", "second copy (IOTLB warm)"} {
		start := m.Now()
		if err := h.Dev.Do(&driver.Request{Opcode: sacc.OpMEMCPY, Src: sd, Dst: dd, Length: n}); err != nil {
			return err
		}
		fmt.Fprintf(log, "%s: %d ns\n", what, m.Now()-start)
	}

	// 3. A hostile DMA: a descriptor that names the physical address of a kernel
	// page no one mapped for the device. A device with buggy or malicious
	// firmware can put any address on the bus; here the driver hands it one.
	secret, err := kernelBuffer(h, ch09Secret)
	if err != nil {
		return err
	}
	loot, err := kernelBuffer(h, make([]byte, len(ch09Secret)))
	if err != nil {
		return err
	}
	ld, err := pd.DMAMapSingle(loot, uint64(len(ch09Secret)), kernel.DMAFromDevice)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "hostile DMA: the device is told to read %#x, the physical address of a kernel secret\n", secret)
	r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: secret, Dst: ld, Length: uint32(len(ch09Secret))}
	_ = h.Dev.Do(r)
	got := make([]byte, len(ch09Secret))
	h.CPU.LoadBytes(loot, got)
	if bytes.Equal(got, ch09Secret) {
		fmt.Fprintf(log, "hostile DMA: status %v; the secret left the kernel: %q\n", r.Status, got)
	} else {
		fmt.Fprintf(log, "hostile DMA: status %v (%d); not one byte of the secret moved\n", r.Status, r.Status)
	}
	ch09DrainFaults(h, log)
	pd.DMAUnmapSingle(ld, uint64(len(ch09Secret)), kernel.DMAFromDevice)

	// 4. A mapping changes: dst is unmapped, a new buffer is mapped, and the
	// kernel hands out the same IOVA again (strict mode) or a fresh one (lazy
	// mode, which holds freed IOVAs back until its batched flush).
	if !on {
		fmt.Fprintf(log, "remap: without an IOMMU there is no mapping to change and no IOTLB to go stale\n")
		return nil
	}
	pd.DMAUnmapSingle(dd, n, kernel.DMAFromDevice)
	fresh, err := kernelBuffer(h, make([]byte, n))
	if err != nil {
		return err
	}
	fd, err := pd.DMAMapSingle(fresh, n, kernel.DMAFromDevice)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "remap: dst unmapped; new buffer phys %#x mapped at dma %#x (%s)\n",
		fresh, fd, map[bool]string{true: "the same IOVA as before", false: "a fresh IOVA"}[fd == dd])
	h.CPU.StoreBytes(src, bytes.Repeat([]byte{0x22}, n))
	h.CPU.WMB()
	if err := h.Dev.Do(&driver.Request{Opcode: sacc.OpMEMCPY, Src: sd, Dst: fd, Length: n}); err != nil {
		fmt.Fprintf(log, "remap copy: %v\n", err)
	}
	newB, oldB := h.CPU.Load8(fresh), h.CPU.Load8(dst)
	if newB == 0x22 {
		fmt.Fprintf(log, "remap copy: 0x22 landed in the new buffer; the old one still holds %#x\n", oldB)
	} else {
		fmt.Fprintf(log, "remap copy: the new buffer holds %#x but the OLD one at phys %#x now holds %#x: a stale IOTLB entry sent the write there\n", newB, dst, oldB)
	}
	pd.DMAUnmapSingle(fd, n, kernel.DMAFromDevice)
	pd.DMAUnmapSingle(sd, n, kernel.DMAToDevice)
	fmt.Fprintf(log, "IOTLB flushes by the kernel: %d\n", h.K.Stats.IOTLBFlushes)
	return nil
}

// ch09Perm describes the device's rights on a DMA address, from the page tables.
func ch09Perm(h *host.Host, dma uint64) string {
	if !h.K.IOMMUOn() {
		return "no IOMMU: any access"
	}
	steps := h.M.IOMMU().Walk(dma)
	perm := uint64(sacc.PTEPermMask)
	for _, s := range steps {
		perm &= s.Entry.Perm()
	}
	if len(steps) < sacc.IOPTLevels {
		perm = 0
	}
	return map[uint64]string{0: "not mapped", sacc.PTERead: "device may read", sacc.PTEWrite: "device may write",
		sacc.PTERead | sacc.PTEWrite: "device may read and write"}[perm]
}

// ch09DrainFaults is the kernel's fault handler: read the IOMMU's STATUS, consume
// every record between FAULT_HEAD and FAULT_TAIL, report each one the way Linux's
// DMAR driver does, and move FAULT_HEAD on. Every access goes through the CPU, so
// it shows in the trace and costs time.
func ch09DrainFaults(h *host.Host, log interface{ Write([]byte) (int, error) }) int {
	if !h.K.IOMMUOn() {
		return 0
	}
	c, base := h.CPU, uint64(sacc.IOMMUBase)
	if c.Readl(base+sacc.IOMMURegSTATUS)&sacc.IOMMUStatusFaultsLog == 0 {
		fmt.Fprintf(log, "fault log: empty\n")
		return 0
	}
	logBase := c.Readq(base + sacc.IOMMURegFaultBase)
	size := c.Readl(base + sacc.IOMMURegFaultSize)
	head := c.Readl(base + sacc.IOMMURegFaultHead)
	tail := c.Readl(base + sacc.IOMMURegFaultTail)
	n := 0
	for head != tail {
		var b [sacc.FaultRecordSize]byte
		c.LoadBytes(logBase+uint64(head)*sacc.FaultRecordSize, b[:])
		f := sacc.DecodeFaultRecord(b[:])
		access := map[uint8]string{sacc.AccessRead: "Read", sacc.AccessWrite: "Write"}[f.Access]
		h.K.Printk("DMAR: [DMA %s] Request device [%02x:%02x.%d] fault addr %#x [fault reason %d] %v",
			access, f.SourceID>>8, f.SourceID>>3&0x1F, f.SourceID&7, f.IOVA, f.Reason, f.Reason)
		fmt.Fprintf(log, "fault record %d: iova %#x reason %d (%v) access %s source %#04x\n",
			head, f.IOVA, f.Reason, f.Reason, access, f.SourceID)
		head = (head + 1) % size
		n++
	}
	c.Writel(base+sacc.IOMMURegFaultHead, head)
	return n
}

// IOMMUFlush runs the same work under strict and lazy invalidation: 40 jobs,
// each mapping a fresh 4 KiB destination, copying into it and unmapping it. Lazy
// mode flushes once per 32 unmaps, so after 40 the last 8 are still waiting. It
// then shows what lazy mode pays for its speed: after an unmap, a late command
// to the old IOVA still reaches the page.
func IOMMUFlush(m *machine.Machine, env *Env) error {
	const jobs, size = 40, 4096
	for _, lazy := range []bool{false, true} {
		mm := m
		if lazy {
			var err error
			if mm, err = machine.New(m.Config()); err != nil {
				return err
			}
		}
		cfg := host.Config{Machine: mm.Config(), Kernel: kernel.Config{IOMMU: true, LazyUnmap: lazy}, Driver: driver.Config{RingSize: 8}}
		h, err := host.BootOn(mm, cfg)
		if err != nil {
			return err
		}
		if !lazy {
			env.Host = h
		}
		name := map[bool]string{false: "strict", true: "lazy"}[lazy]
		pd := h.Dev.PCI()
		src, err := kernelBuffer(h, bytes.Repeat([]byte{0xA5}, size))
		if err != nil {
			return err
		}
		sd, err := pd.DMAMapSingle(src, size, kernel.DMAToDevice)
		if err != nil {
			return err
		}
		dsts := make([]uint64, jobs)
		for i := range dsts {
			if dsts[i], err = h.K.AllocPages(size); err != nil { // zeroed pages
				return err
			}
		}
		flushes, start := h.K.Stats.IOTLBFlushes, mm.Now()
		var last uint64
		for _, dst := range dsts {
			dd, err := pd.DMAMapSingle(dst, size, kernel.DMAFromDevice)
			if err != nil {
				return err
			}
			if err := h.Dev.Do(&driver.Request{Opcode: sacc.OpMEMCPY, Src: sd, Dst: dd, Length: size}); err != nil {
				return err
			}
			pd.DMAUnmapSingle(dd, size, kernel.DMAFromDevice)
			last = dd
		}
		fmt.Fprintf(env.Log, "%s: %d jobs in %d ns (%d ns per job); writes to INVALIDATE: %d\n",
			name, jobs, mm.Now()-start, (mm.Now()-start)/jobs, h.K.Stats.IOTLBFlushes-flushes)

		// The window: one more command to the last destination, already unmapped.
		var probe [8]byte
		binary.LittleEndian.PutUint64(probe[:], 0x5EC0_5EC0_5EC0_5EC0)
		h.CPU.StoreBytes(src, probe[:])
		h.CPU.WMB()
		h.CPU.StoreBytes(dsts[jobs-1], make([]byte, 8))
		h.CPU.WMB()
		r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: sd, Dst: last, Length: 8}
		_ = h.Dev.Do(r)
		if h.CPU.Load64(dsts[jobs-1]) == 0x5EC0_5EC0_5EC0_5EC0 {
			fmt.Fprintf(env.Log, "%s: a late write to unmapped dma %#x still landed in its old page (status %v): the IOTLB entry outlived the mapping\n", name, last, r.Status)
		} else {
			fmt.Fprintf(env.Log, "%s: a late write to unmapped dma %#x was stopped (status %v)\n", name, last, r.Status)
		}
		ch09DrainFaults(h, env.Log)
		pd.DMAUnmapSingle(sd, size, kernel.DMAToDevice)
		h.K.FlushIOTLB()
	}
	return nil
}
