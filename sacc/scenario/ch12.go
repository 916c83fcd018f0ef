package scenario

import (
	"bytes"
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
)

// Chapter 12, describing memory: a user buffer is contiguous only in the
// process's imagination.

var _ = register(Scenario{
	Chapter: 12, Primary: true, Name: "sg",
	Summary: "a 12 KiB user buffer: pinned page by page into a scatterlist, made one contiguous IOVA range by dma_map_sg (or cut into pieces without an IOMMU), copied through ioctl; a kernel buffer that crosses a page",
	Options: []Option{{Name: "iommu", Doc: "DMA through the IOMMU", Default: "on", Values: values("on", "off")}},
	Quirks:  []quirk.Quirk{quirk.FirstPageOnly, quirk.WrongDMADirection},
	Run:     ScatterGather,
})

// ch12Len is the user buffer's length, and ch12Off where it starts in its first
// page: 0x800 + 12 KiB touches four pages.
const (
	ch12Len = 12 << 10
	ch12Off = 0x800
)

// ScatterGather follows one user buffer from virtual addresses to what the
// device is given.
func ScatterGather(m *machine.Machine, env *Env) error {
	cfg := host.Config{Machine: m.Config(), Driver: driver.Config{RingSize: 8}}
	switch env.Option("iommu", "on") {
	case "on":
		cfg.Kernel.IOMMU = true
	case "off":
	default:
		return fmt.Errorf("iommu=%s: want on or off", env.Option("iommu", ""))
	}
	h, err := boot(m, env, cfg)
	if err != nil {
		return err
	}
	log := env.Log
	p := h.K.NewProcess("app")
	srcBase, err := p.Alloc(ch12Off + ch12Len)
	if err != nil {
		return err
	}
	dstBase, err := p.Alloc(ch12Off + ch12Len)
	if err != nil {
		return err
	}
	src, dst := srcBase+ch12Off, dstBase+ch12Off
	payload := make([]byte, ch12Len)
	for i := range payload {
		payload[i] = byte(i / sacc.PageSize * 0x11) // a different byte in every page
	}
	p.StoreBytes(src, payload)
	fmt.Fprintf(log, "user buffer: %d bytes at virtual %#x-%#x, one range to the process\n", ch12Len, src, src+ch12Len-1)

	// 1. pin_user_pages: look up and pin the physical page behind each virtual
	// page; the result is a scatterlist.
	sg, err := p.PinUserPages(src, ch12Len)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "pin_user_pages: %d pages pinned; the scatterlist has %d entries:\n", p.Pinned(), len(sg))
	for i, e := range sg {
		fmt.Fprintf(log, "  sg[%d]: phys %#x len %#x\n", i, e.Phys, e.Len)
	}

	// 2. dma_map_sg: what the device will be given.
	pd := h.Dev.PCI()
	nseg, err := pd.DMAMapSG(sg, kernel.DMAToDevice)
	if err != nil {
		return err
	}
	if h.K.IOMMUOn() {
		fmt.Fprintf(log, "dma_map_sg: %d entries became %d DMA segment: dma %#x len %#x, contiguous in IOVA space\n", len(sg), nseg, sg[0].DMAAddr, sg[0].DMALen)
	} else {
		fmt.Fprintf(log, "dma_map_sg without an IOMMU: %d segments, each its own physical address\n", nseg)
	}
	pd.DMAUnmapSG(sg, kernel.DMAToDevice)
	p.UnpinUserPages(sg)
	fmt.Fprintf(log, "dma_unmap_sg and unpin: %d pages still pinned\n", p.Pinned())

	// 3. The kernel path does all of that for one ioctl: pin, map, submit,
	// wait, unmap, unpin.
	fd, err := p.Open(driver.DevPath)
	if err != nil {
		return err
	}
	args, err := p.Alloc(sacc.PageSize)
	if err != nil {
		return err
	}
	sub := driver.SubmitArgs{Opcode: sacc.OpMEMCPY, Length: ch12Len, Src: src, Dst: dst}
	sub.Store(p, args)
	descs, doorbells, start := h.Dev.Stats.Submitted, h.Dev.Stats.Doorbells, m.Now()
	_, ioErr := p.Ioctl(fd, driver.IocSubmit, args)
	took := m.Now() - start
	sub.LoadResult(p, args)
	got := make([]byte, ch12Len)
	p.LoadBytes(dst, got)
	fmt.Fprintf(log, "ioctl(SUBMIT) MEMCPY of %d bytes: %d descriptor(s), %d doorbell(s), %d ns; status %v, result_len %d; data %s\n",
		ch12Len, h.Dev.Stats.Submitted-descs, h.Dev.Stats.Doorbells-doorbells, took,
		sub.Status, sub.ResultLen,
		map[bool]string{true: "arrived", false: "did NOT arrive"}[bytes.Equal(got, payload)])
	if ioErr != nil {
		fmt.Fprintf(log, "ioctl: %v\n", ioErr)
		ch09DrainFaults(h, log)
	}
	if err := p.Close(fd); err != nil {
		return err
	}

	// 4. A kernel buffer that crosses a page boundary, mapped with
	// dma_map_single: every page it touches must be mapped.
	const kn = 6 << 10
	kbuf, err := h.K.AllocPages(2 * sacc.PageSize)
	if err != nil {
		return err
	}
	ksrc := kbuf + ch12Off // 0x800 + 6 KiB: two pages
	h.CPU.StoreBytes(ksrc, bytes.Repeat([]byte{0xC3}, kn))
	h.CPU.WMB()
	kdst, err := h.K.AllocPages(2 * sacc.PageSize)
	if err != nil {
		return err
	}
	sd, err := pd.DMAMapSingle(ksrc, kn, kernel.DMAToDevice)
	if err != nil {
		return err
	}
	dd, err := pd.DMAMapSingle(kdst, kn, kernel.DMAFromDevice)
	if err != nil {
		return err
	}
	r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: sd, Dst: dd, Length: kn}
	_ = h.Dev.Do(r)
	fmt.Fprintf(log, "kernel buffer phys %#x-%#x (two pages) mapped at dma %#x: MEMCPY of %d bytes, status %v\n", ksrc, ksrc+kn-1, sd, kn, r.Status)
	if r.Status != sacc.StatusOK {
		ch09DrainFaults(h, log)
	}
	pd.DMAUnmapSingle(dd, kn, kernel.DMAFromDevice)
	pd.DMAUnmapSingle(sd, kn, kernel.DMAToDevice)
	return nil
}
