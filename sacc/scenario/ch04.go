package scenario

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Chapter 4, "DMA": two buffers from dma_alloc_coherent, each with a CPU address
// and a DMA address; one MEMCPY through the driver; and every access the device
// made to host memory, named, with the CPU never touching the destination.

var _ = register(Scenario{
	Chapter: 4, Primary: true, Name: "dma",
	Summary: "DMA: coherent buffers with a CPU address and a DMA address; the device fetches the descriptor, copies the data and writes the completion itself",
	Options: []Option{{Name: "iommu", Doc: "DMA through the IOMMU", Default: "off", Values: values("off", "on")}},
	Quirks:  []quirk.Quirk{quirk.SkipBusMaster},
	Run:     DMATour,
})

// ch04Message is what the device copies; its length is what the chapter quotes.
const ch04Message = "the device copied this line by itself; the CPU only asked."

// DMATour copies one buffer by DMA and lists the device's memory accesses.
func DMATour(m *machine.Machine, env *Env) error {
	log := env.Log
	cfg := host.Config{Machine: m.Config(), Driver: driver.Config{RingSize: 8}}
	switch env.Option("iommu", "off") {
	case "on":
		cfg.Kernel.IOMMU = true
	case "off":
	default:
		return fmt.Errorf("iommu=%s: want on or off", env.Option("iommu", ""))
	}
	h, err := host.BootOn(m, cfg)
	env.Host = h
	if err != nil {
		return err
	}
	pd, c := h.Dev.PCI(), h.CPU
	st := m.Device().State()
	fmt.Fprintf(log, "the driver's rings came from dma_alloc_coherent: SQ_BASE = %#x, CQ_BASE = %#x (DMA addresses)\n", st.SQBase, st.CQBase)

	// Two buffers the CPU and the device both use.
	const size = sacc.PageSize
	srcCPU, srcDMA, err := pd.DMAAllocCoherent(size)
	if err != nil {
		return err
	}
	dstCPU, dstDMA, err := pd.DMAAllocCoherent(size)
	if err != nil {
		return err
	}
	same := "the same numbers: no IOMMU, the device uses physical addresses"
	if h.K.IOMMUOn() {
		same = "different numbers: the IOMMU translates what the device uses"
	}
	fmt.Fprintf(log, "source: CPU address %#x, DMA address %#x; destination: CPU address %#x, DMA address %#x (%s)\n",
		srcCPU, srcDMA, dstCPU, dstDMA, same)
	c.StoreBytes(srcCPU, []byte(ch04Message))

	// Watch the device's side of the copy, and the CPU's stores to the destination.
	type access struct {
		kind            trace.Kind
		iova, phys, len uint64
		at              uint64
	}
	var seen []access
	cpuStores := 0
	inDst := func(a uint64) bool { return a >= dstCPU && a < dstCPU+size }
	detach := m.Tracer().Attach(trace.Func(func(ev trace.Event) {
		switch ev.Kind {
		case trace.DMARead, trace.DMAWrite:
			seen = append(seen, access{ev.Kind, ev.Args[0], ev.Args[1], ev.Args[2], uint64(ev.Time)})
		case trace.CPUWrite:
			if inDst(ev.Args[0]) {
				cpuStores++
			}
		}
	}))
	r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: srcDMA, Dst: dstDMA, Length: uint32(len(ch04Message))}
	err = h.Dev.Do(r)
	detach()
	if err != nil {
		cmd := pd.ReadConfig16(sacc.CfgCommand)
		fmt.Fprintf(log, "the copy failed: %v; COMMAND = 0x%04x, bus master %s\n", err, cmd, ch01OnOff(cmd&sacc.CmdBusMaster != 0))
		return err
	}
	start := seen[0].at
	for _, a := range seen {
		what := "?"
		switch {
		case a.iova >= st.SQBase && a.iova < st.SQBase+uint64(st.SQSize)*sacc.DescriptorSize:
			what = fmt.Sprintf("the descriptor in SQ slot %d", (a.iova-st.SQBase)/sacc.DescriptorSize)
		case a.iova >= st.CQBase && a.iova < st.CQBase+uint64(st.CQSize)*sacc.CompletionSize:
			what = fmt.Sprintf("the completion in CQ slot %d", (a.iova-st.CQBase)/sacc.CompletionSize)
		case a.iova == srcDMA:
			what = "the source buffer"
		case a.iova == dstDMA:
			what = "the destination buffer"
		}
		dir := "read "
		if a.kind == trace.DMAWrite {
			dir = "wrote"
		}
		fmt.Fprintf(log, "+%4d ns: the device %s %2d bytes at DMA address %#x (physical %#x): %s\n", a.at-start, dir, a.len, a.iova, a.phys, what)
	}
	got := make([]byte, len(ch04Message))
	c.LoadBytes(dstCPU, got)
	fmt.Fprintf(log, "MEMCPY req_id %#x: status %v, %d bytes; the CPU made %d stores to the destination, which now reads %q\n",
		r.ReqID, r.Status, r.ResultLen, cpuStores, got)
	if string(got) != ch04Message {
		return fmt.Errorf("the destination holds %q", got)
	}

	if h.K.IOMMUOn() {
		// The classic mistake: handing the device a CPU address.
		bad := &driver.Request{Opcode: sacc.OpMEMCPY, Src: srcCPU, Dst: dstDMA, Length: uint32(len(ch04Message))}
		err := h.Dev.Do(bad)
		fmt.Fprintf(log, "the same copy with the source's CPU address %#x in the descriptor: status %v (%v)\n", srcCPU, bad.Status, err)
	}
	pd.DMAFreeCoherent(size, dstCPU, dstDMA)
	pd.DMAFreeCoherent(size, srcCPU, srcDMA)
	return nil
}
