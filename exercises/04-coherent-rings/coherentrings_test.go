package coherentrings

import (
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// budget is how much virtual time SetUpRings may take: two allocations and six
// register writes.
const budget sim.Time = 1_000_000

type rig struct {
	*check.Machine
	pdev  *kernel.PCIDev
	regs  *kernel.IOMem
	iommu bool
}

func setUp(t *testing.T, iommu bool) *rig {
	m := check.Boot(t, host.Config{Kernel: kernel.Config{IOMMU: iommu}})
	devs := m.K.Devices()
	if len(devs) != 1 {
		t.Fatalf("check: the kernel found %d PCI functions, want 1", len(devs))
	}
	pdev := devs[0]
	if err := pdev.EnableDevice(); err != nil {
		t.Fatalf("check: pci_enable_device: %v", err)
	}
	pdev.SetMaster()
	regs, err := pdev.IOMap(0)
	if err != nil {
		t.Fatalf("check: pci_iomap: %v", err)
	}
	return &rig{Machine: m, pdev: pdev, regs: regs, iommu: iommu}
}

func (r *rig) setUpRings(size uint32) (Rings, []trace.Event, error) {
	var rings Rings
	var err error
	mark := r.Mark()
	r.Do("SetUpRings", budget, func() { rings, err = SetUpRings(r.pdev, r.regs, size) })
	return rings, r.Since(mark), err
}

func (r *rig) where() string {
	if r.iommu {
		return "With the IOMMU on, a DMA address is an IOVA that only the IOMMU can translate; it is never the CPU address."
	}
	return "Without an IOMMU the DMA address is the physical address."
}

// checkRegisters compares the ring registers with the rings SetUpRings returned.
func (r *rig) checkRegisters(rings Rings, size uint32) {
	st := r.M.Device().State()
	if st.Ctrl&sacc.CtrlEnable != 0 {
		r.Fatalf("SetUpRings set CTRL.ENABLE. Leave that to the caller: it may still have MSI-X to set up (§7.5).")
	}
	if rings.Size != size {
		r.Fatalf("SetUpRings returned Rings.Size = %d, want %d.", rings.Size, size)
	}
	for _, reg := range []struct {
		name      string
		got, want uint64
		cpu       uint64
	}{
		{"SQ_BASE", st.SQBase, rings.SQDMA, rings.SQCPU},
		{"CQ_BASE", st.CQBase, rings.CQDMA, rings.CQCPU},
		{"SQ_SIZE", uint64(st.SQSize), uint64(size), 0},
		{"CQ_SIZE", uint64(st.CQSize), uint64(size), 0},
	} {
		if reg.got == reg.want {
			continue
		}
		if reg.cpu != 0 && reg.got == reg.cpu {
			r.Fatalf("%s holds %#x, the CPU address of the ring; the device needs its DMA address, %#x.\n%s",
				reg.name, reg.got, reg.want, r.where())
		}
		if reg.cpu != 0 && uint32(reg.got) == uint32(reg.want) {
			r.Fatalf("%s holds %#x, want %#x: its high half (the register at +4) still holds what was there before. "+
				"A 64-bit register needs both halves written, or one 64-bit write.", reg.name, reg.got, reg.want)
		}
		r.Fatalf("%s holds %#x, want %#x.", reg.name, reg.got, reg.want)
	}
}

// checkMappings follows each page of both rings from its DMA address to the
// physical page behind it, the way the device will, and compares it with the CPU
// address: both must name the same memory, and all of the ring must be there.
func (r *rig) checkMappings(rings Rings) {
	for _, ring := range []struct {
		name     string
		cpu, dma uint64
		bytes    uint64
		entry    string
	}{
		{"SQ", rings.SQCPU, rings.SQDMA, uint64(rings.Size) * sacc.DescriptorSize, "sacc.DescriptorSize"},
		{"CQ", rings.CQCPU, rings.CQDMA, uint64(rings.Size) * sacc.CompletionSize, "sacc.CompletionSize"},
	} {
		for off := uint64(0); off < ring.bytes; off += sacc.PageSize {
			phys, ok := r.translate(ring.dma + off)
			switch {
			case !ok && off == 0:
				r.Fatalf("Nothing is mapped for the device at the %s's DMA address, Rings.%sDMA = %#x: its very first access "+
					"would fault. Is that really the DMA address, the second result of DMAAllocCoherent?\n%s",
					ring.name, ring.name, ring.dma, r.where())
			case phys != ring.cpu+off && off == 0:
				r.Fatalf("The %s's DMA address %#x leads the device to physical address %#x, but its CPU address "+
					"Rings.%sCPU is %#x: the CPU and the device would use different memory.\n"+
					"Keep both results of each DMAAllocCoherent call together.",
					ring.name, ring.dma, phys, ring.name, ring.cpu)
			case !ok || phys != ring.cpu+off:
				r.Fatalf("The %s holds %d entries, %d bytes, but only its first %d bytes are the memory the CPU writes: "+
					"at DMA address %#x the device reaches other memory, or none. The allocation is too small: "+
					"allocate size × %s bytes for the %s.",
					ring.name, rings.Size, ring.bytes, off, ring.dma+off, ring.entry, ring.name)
			}
		}
	}
}

// translate is where the device's access to iova lands, without touching the
// IOTLB or the trace. With the IOMMU off, an address is its own translation
// (this kernel's CPU addresses are physical addresses too).
func (r *rig) translate(iova uint64) (uint64, bool) {
	if !r.iommu {
		return iova, true
	}
	steps := r.M.IOMMU().Walk(iova)
	if len(steps) != sacc.IOPTLevels {
		return 0, false
	}
	leaf := steps[len(steps)-1]
	if leaf.NotRAM || !leaf.Entry.Present() {
		return 0, false
	}
	return leaf.Entry.Addr() | iova&sacc.PageMask, true
}

// runJobs enables the device and runs n NOPs through the rings: the test writes
// each descriptor at Rings.SQCPU and reads each completion at Rings.CQCPU, so
// both the CPU addresses and the DMA addresses must be right.
func (r *rig) runJobs(rings Rings, n int) {
	r.regs.Writel(sacc.RegCTRL, sacc.CtrlEnable)
	r.CPU.Delay(5_000)
	if st := r.M.Device().State(); st.Status&sacc.StatusReady == 0 {
		r.Fatalf("With the rings SetUpRings programmed, the device refused ENABLE: STATUS %#x, ERR_CODE %d (§7.5: "+
			"sizes must be powers of two from 2 to 4096 and bases 4 KiB aligned).", st.Status, st.ErrCode)
	}
	mark := r.Mark()
	var b [sacc.DescriptorSize]byte
	for i := range n {
		sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 0x700 + uint32(i)}.Encode(b[:])
		r.CPU.StoreBytes(rings.SQCPU+uint64(i)*sacc.DescriptorSize, b[:])
	}
	r.CPU.WMB()
	r.regs.Writel(sacc.RegSQTail, uint32(n)%rings.Size)
	r.CPU.Delay(sim.Time(n) * 2_000)
	evs := r.Since(mark)
	if errs := check.Find(evs, trace.DeviceError); len(errs) > 0 {
		msg := fmt.Sprintf("The test wrote %d NOPs at Rings.SQCPU and rang the doorbell; the device halted with error %d.", n, errs[0].Args[0])
		if faults := check.Find(evs, trace.IOMMUFault); len(faults) > 0 {
			at := faults[0].Args[0]
			msg += fmt.Sprintf("\nThe IOMMU blocked its access to DMA address %#x: nothing is mapped there.", at)
			sqEnd := rings.SQDMA + uint64(rings.Size)*sacc.DescriptorSize
			if at >= rings.SQDMA && at < sqEnd {
				msg += fmt.Sprintf(" That is slot %d of the SQ: the SQ must hold %d descriptors of %d bytes, %d bytes in all.",
					(at-rings.SQDMA)/sacc.DescriptorSize, rings.Size, sacc.DescriptorSize, uint64(rings.Size)*sacc.DescriptorSize)
			}
		}
		r.Fatalf("%s", msg)
	}
	for i := range n {
		cpl := sacc.Completion{
			ReqID: r.CPU.Load32(rings.CQCPU + uint64(i)*sacc.CompletionSize + sacc.CplReqIDOff),
			Phase: uint8(r.CPU.Load16(rings.CQCPU+uint64(i)*sacc.CompletionSize+sacc.CplPhaseOff) & sacc.CplPhaseBit),
		}
		if want := 0x700 + uint32(i); cpl.ReqID != want || cpl.Phase != 1 {
			descs := check.Find(evs, trace.Descriptor)
			seen := "nothing"
			if i < len(descs) {
				seen = fmt.Sprintf("req_id %#x", descs[i].Args[0])
			}
			r.Fatalf("The test wrote NOP req_id %#x at Rings.SQCPU + %d and read its completion at Rings.CQCPU + %d: "+
				"it found req_id %#x, phase %d. The device fetched %s from that slot.\n"+
				"Rings.SQCPU and Rings.CQCPU must be the CPU addresses of the very memory whose DMA addresses are in "+
				"SQ_BASE and CQ_BASE: keep both results of each DMAAllocCoherent call together.",
				want, i*sacc.DescriptorSize, i*sacc.CompletionSize, cpl.ReqID, cpl.Phase, seen)
		}
	}
}

func TestRingsWithoutIOMMU(t *testing.T) {
	r := setUp(t, false)
	// An earlier driver left its own bases behind, high halves included.
	r.regs.Writel(sacc.RegSQBaseHi, 0x1)
	r.regs.Writel(sacc.RegCQBaseHi, 0x2)
	rings, _, err := r.setUpRings(8)
	if err != nil {
		r.Fatalf("SetUpRings(8) returned an error: %v", err)
	}
	r.checkRegisters(rings, 8)
	r.checkMappings(rings)
	r.runJobs(rings, 7)
}

func TestRingsBehindTheIOMMU(t *testing.T) {
	r := setUp(t, true)
	rings, _, err := r.setUpRings(8)
	if err != nil {
		r.Fatalf("SetUpRings(8) returned an error: %v", err)
	}
	if rings.SQCPU == rings.SQDMA || rings.CQCPU == rings.CQDMA {
		r.Fatalf("With the IOMMU on, SetUpRings returned the same number as CPU address and DMA address "+
			"(SQ %#x / %#x, CQ %#x / %#x). dma_alloc_coherent gives two different addresses: keep both.",
			rings.SQCPU, rings.SQDMA, rings.CQCPU, rings.CQDMA)
	}
	r.checkRegisters(rings, 8)
	r.checkMappings(rings)
	r.runJobs(rings, 7)
}

func TestRingsOfEveryEntrySize(t *testing.T) {
	// 256 descriptors of 32 bytes are two pages; 256 completions of 16 bytes, one.
	r := setUp(t, true)
	rings, _, err := r.setUpRings(256)
	if err != nil {
		r.Fatalf("SetUpRings(256) returned an error: %v", err)
	}
	r.checkRegisters(rings, 256)
	r.checkMappings(rings)
	r.runJobs(rings, 255)
}

func TestRingsRefuseBadSizes(t *testing.T) {
	for _, size := range []uint32{0, 1, 3, 96, 8192} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			r := setUp(t, false)
			inUse := r.K.MemInUse()
			_, evs, err := r.setUpRings(size)
			if err == nil {
				r.Fatalf("SetUpRings(%d) returned nil. The device would refuse ENABLE with such rings (ERR_CODE 6): "+
					"sizes must be powers of two from %d to %d (§7.5). Return an error instead.", size, sacc.MinRingSize, sacc.MaxRingSize)
			}
			if w := check.Find(evs, trace.RegWrite); len(w) > 0 {
				r.Fatalf("SetUpRings(%d) returned an error, good, but wrote registers first:\n%s", size, check.Lines(w))
			}
			if got := r.K.MemInUse(); got != inUse {
				r.Fatalf("SetUpRings(%d) returned an error, good, but left %d bytes allocated: check the size before "+
					"allocating anything.", size, got-inUse)
			}
		})
	}
}

// TestGivesBackWhatItTookWhenAnAllocationFails: the kernel refuses the second
// dma_alloc_coherent, then the first.
func TestGivesBackWhatItTookWhenAnAllocationFails(t *testing.T) {
	for skip, which := range []string{"the first", "the second"} {
		t.Run(which, func(t *testing.T) {
			// Without an IOMMU: its page tables stay allocated after an unmap.
			r := setUp(t, false)
			if err := r.K.InjectFault("dma_alloc_coherent", skip, kernel.ENOMEM); err != nil {
				t.Fatalf("check: %v", err)
			}
			inUse := r.K.MemInUse()
			_, _, err := r.setUpRings(8)
			if err == nil {
				r.Fatalf("The kernel refused %s dma_alloc_coherent of SetUpRings (ENOMEM), yet SetUpRings returned nil: "+
					"rings that do not exist cannot be used. Return the error.", which)
			}
			if got := r.K.MemInUse(); got != inUse {
				r.Fatalf("The kernel refused %s dma_alloc_coherent and SetUpRings returned an error, good, but it left %d "+
					"bytes allocated: free what you allocated before giving up (dma_free_coherent).", which, got-inUse)
			}
		})
	}
}
