package driver

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/quirk"
)

type chrdev struct{ dev *Device }

type openFile struct {
	maps []mapping
}

// mapping is one pinned, DMA-mapped user buffer: its user address, the DMA
// address the device uses, and what unmapping needs.
type mapping struct {
	addr, dma uint64
	dir       kernel.Direction
	sg        []kernel.SG
}

func (c *chrdev) Open(f *kernel.File) error {
	f.Private = &openFile{}
	return nil
}

func (c *chrdev) Release(f *kernel.File) {
	of := f.Private.(*openFile)
	if c.dev.bypass != nil && c.dev.bypass.owner == f {
		c.dev.releaseRings()
	}
	for _, m := range of.maps {
		c.dev.unmapUser(f.Proc, m)
	}
	of.maps = nil
}

func (c *chrdev) Poll(f *kernel.File) bool {
	if c.dev.bypass != nil {
		return false
	}
	return c.dev.Reap() > 0
}

func (c *chrdev) Mmap(f *kernel.File, offset, length uint64) ([]uint64, bool, error) {
	dev := c.dev
	if offset == sacc.RegisterPage && !dev.userMayMapRegisterPage() {
		dev.pdev.Info("mmap of the register page refused (pid %d)", f.Proc.PID)
		return nil, false, kernel.EPERM
	}
	if offset+length > sacc.BAR0Size {
		return nil, false, kernel.EINVAL
	}
	// io_remap_pfn_range: the process maps BAR0's physical pages.
	bar := dev.pdev.BAR[0].Start
	var pages []uint64
	for off := offset; off < offset+length; off += sacc.PageSize {
		pages = append(pages, bar+off)
	}
	return pages, true, nil
}

// userMayMapRegisterPage is false: the register page holds CTRL, the ring bases
// and the rest, which a process must never reach; only the doorbell page is
// meant for user space (§5.1). Under map-register-page the driver lets it.
func (dev *Device) userMayMapRegisterPage() bool { return dev.q.Has(quirk.MapRegisterPage) }

func (c *chrdev) Ioctl(f *kernel.File, cmd uint32, arg uint64) (uint64, error) {
	dev, p := c.dev, f.Proc
	switch cmd {
	case IocSubmit:
		return 0, dev.ioctlSubmit(p, arg)
	case IocMapBuffer:
		a, err := copyMapArgsFromUser(p, arg)
		if err != nil {
			return 0, err
		}
		m, err := dev.mapUser(p, a.Addr, a.Length, a.Dir)
		if err != nil {
			return 0, err
		}
		of := f.Private.(*openFile)
		of.maps = append(of.maps, m)
		a.DMA = m.dma
		a.copyToUser(p, arg)
		return m.dma, nil
	case IocUnmapBuffer:
		a, err := copyMapArgsFromUser(p, arg)
		if err != nil {
			return 0, err
		}
		of := f.Private.(*openFile)
		for i, m := range of.maps {
			if m.addr == a.Addr {
				dev.unmapUser(p, m)
				of.maps = append(of.maps[:i], of.maps[i+1:]...)
				return 0, nil
			}
		}
		return 0, kernel.EINVAL
	case IocSetupRings:
		a, err := copyRingArgsFromUser(p, arg)
		if err != nil {
			return 0, err
		}
		return 0, dev.setupRings(f, a.SQ, a.CQ, a.Size)
	case IocReleaseRings:
		if dev.bypass == nil || dev.bypass.owner != f {
			return 0, kernel.EINVAL
		}
		return 0, dev.releaseRings()
	}
	return 0, fmt.Errorf("ioctl %#x: %w", cmd, kernel.EINVAL)
}

// mapUser pins a user buffer and maps it for the device as one DMA range. With an
// IOMMU the scattered pages become contiguous IOVAs; without one the buffer must
// already be physically contiguous.
func (dev *Device) mapUser(p *kernel.Process, addr, length uint64, dir kernel.Direction) (mapping, error) {
	if length == 0 {
		return mapping{}, kernel.EINVAL
	}
	sg, err := p.PinUserPages(addr, length)
	if err != nil {
		return mapping{}, err
	}
	if !dev.k.IOMMUOn() && !contiguous(sg) {
		p.UnpinUserPages(sg)
		return mapping{}, fmt.Errorf("buffer %#x is not physically contiguous and there is no IOMMU: %w", addr, kernel.EINVAL)
	}
	if _, err := dev.pdev.DMAMapSG(sg, dir); err != nil {
		p.UnpinUserPages(sg)
		return mapping{}, err
	}
	return mapping{addr: addr, dma: sg[0].DMAAddr, dir: dir, sg: sg}, nil
}

func (dev *Device) unmapUser(p *kernel.Process, m mapping) {
	dev.pdev.DMAUnmapSG(m.sg, m.dir)
	p.UnpinUserPages(m.sg)
}

func contiguous(sg []kernel.SG) bool {
	for i := 1; i < len(sg); i++ {
		if sg[i-1].Phys+sg[i-1].Len != sg[i].Phys {
			return false
		}
	}
	return true
}

// ioctlSubmit is the kernel path for one command on user buffers: copy the
// arguments in, pin and map both buffers, submit, wait, unmap, unpin, copy the
// result out. Without an IOMMU a scattered buffer is cut into physically
// contiguous pieces, one descriptor each.
func (dev *Device) ioctlSubmit(p *kernel.Process, arg uint64) error {
	a, err := copySubmitArgsFromUser(p, arg)
	if err != nil {
		return err
	}
	a.Status, a.ResultLen, err = dev.runUser(p, a.Opcode, a.Length, a.Src, a.Dst)
	a.copyResultToUser(p, arg)
	return err
}

func (dev *Device) runUser(p *kernel.Process, op uint16, length uint32, src, dst uint64) (sacc.Status, uint32, error) {
	if op == sacc.OpNOP || length == 0 {
		r := &Request{Opcode: op, Length: length, IRQ: dev.drv.cfg.Interrupts}
		err := dev.Do(r)
		return r.Status, r.ResultLen, err
	}
	srcDir, dstDir := kernel.DMAToDevice, dev.dstDirection()
	if dev.k.IOMMUOn() {
		sm, err := dev.mapUser(p, src, uint64(length), srcDir)
		if err != nil {
			return 0, 0, err
		}
		defer dev.unmapUser(p, sm)
		dm, err := dev.mapUser(p, dst, uint64(length), dstDir)
		if err != nil {
			return 0, 0, err
		}
		r := &Request{Opcode: op, Src: sm.dma, Dst: dm.dma, Length: length, IRQ: dev.drv.cfg.Interrupts}
		err = dev.doThenUnmap(p, r, dm)
		return r.Status, r.ResultLen, err
	}
	// No IOMMU: pin, then one descriptor per physically contiguous piece pair.
	ssg, err := p.PinUserPages(src, uint64(length))
	if err != nil {
		return 0, 0, err
	}
	defer p.UnpinUserPages(ssg)
	dsg, err := p.PinUserPages(dst, uint64(length))
	if err != nil {
		return 0, 0, err
	}
	defer p.UnpinUserPages(dsg)
	if _, err := dev.pdev.DMAMapSG(ssg, srcDir); err != nil {
		return 0, 0, err
	}
	defer dev.pdev.DMAUnmapSG(ssg, srcDir)
	if _, err := dev.pdev.DMAMapSG(dsg, dstDir); err != nil {
		return 0, 0, err
	}
	defer dev.pdev.DMAUnmapSG(dsg, dstDir)
	var reqs []*Request
	si, di := 0, 0
	var so, do uint64
	for si < len(ssg) && di < len(dsg) {
		n := min(ssg[si].Len-so, dsg[di].Len-do)
		reqs = append(reqs, &Request{Opcode: op, Src: ssg[si].DMAAddr + so, Dst: dsg[di].DMAAddr + do, Length: uint32(n)})
		if so += n; so == ssg[si].Len {
			si, so = si+1, 0
		}
		if do += n; do == dsg[di].Len {
			di, do = di+1, 0
		}
	}
	reqs[len(reqs)-1].IRQ = dev.drv.cfg.Interrupts
	for sent := 0; sent < len(reqs); {
		n, err := dev.SubmitBatch(reqs[sent:])
		sent += n
		if err != nil && err != ErrRingFull {
			return 0, 0, err
		}
		if err := dev.Wait(reqs[sent-1]); err != nil {
			return reqs[sent-1].Status, 0, err
		}
	}
	var total uint32
	for _, r := range reqs {
		if r.Status != sacc.StatusOK {
			return r.Status, 0, fmt.Errorf("sacc: piece failed: %v", r.Status)
		}
		total += r.ResultLen
	}
	return sacc.StatusOK, total, nil
}

// dstDirection is the direction of a destination buffer: the device writes it
// (DMA_FROM_DEVICE, an IOMMU write-only mapping). Under wrong-dma-direction it is
// mapped DMA_TO_DEVICE, and the device may not write it.
func (dev *Device) dstDirection() kernel.Direction {
	if dev.q.Has(quirk.WrongDMADirection) {
		return kernel.DMAToDevice
	}
	return kernel.DMAFromDevice
}

// doThenUnmap runs r and only then unmaps its destination dm: the device may
// write it until the completion says it is done. Under unmap-while-in-use the
// mapping goes right after the doorbell, while the device may still be writing.
func (dev *Device) doThenUnmap(p *kernel.Process, r *Request, dm mapping) error {
	if dev.q.Has(quirk.UnmapWhileInUse) {
		err := dev.Submit(r)
		dev.unmapUser(p, dm)
		if err != nil {
			return err
		}
		return dev.Wait(r)
	}
	defer dev.unmapUser(p, dm)
	return dev.Do(r)
}

// ---------------------------------------------------------------------------
// Bypass: a process owns the queue

type bypassState struct {
	owner  *kernel.File
	sq, cq mapping
}

// setupRings moves the device onto rings in a process's memory. The kernel
// queue must be idle; the device is disabled, reprogrammed and enabled again.
func (dev *Device) setupRings(f *kernel.File, sq, cq uint64, size uint32) error {
	if dev.bypass != nil {
		return kernel.EBUSY
	}
	if dev.count > 0 {
		return fmt.Errorf("kernel queue busy (%d in flight): %w", dev.count, kernel.EBUSY)
	}
	if !sacc.IsPowerOfTwo(uint64(size)) || size < sacc.MinRingSize || size > sacc.MaxRingSize {
		return kernel.EINVAL
	}
	p := f.Proc
	sm, err := dev.mapUser(p, sq, uint64(size)*sacc.DescriptorSize, kernel.DMAToDevice)
	if err != nil {
		return err
	}
	cm, err := dev.mapUser(p, cq, uint64(size)*sacc.CompletionSize, kernel.DMAFromDevice)
	if err != nil {
		dev.unmapUser(p, sm)
		return err
	}
	if sm.dma%sacc.RingAlign != 0 || cm.dma%sacc.RingAlign != 0 {
		dev.unmapUser(p, sm)
		dev.unmapUser(p, cm)
		return fmt.Errorf("rings must be page-aligned: %w", kernel.EINVAL)
	}
	if !dev.stop(0) {
		dev.unmapUser(p, sm)
		dev.unmapUser(p, cm)
		return kernel.EIO
	}
	dev.regs.Writeq(sacc.RegSQBaseLo, sm.dma)
	dev.writeReg(sacc.RegSQSize, size)
	dev.regs.Writeq(sacc.RegCQBaseLo, cm.dma)
	dev.writeReg(sacc.RegCQSize, size)
	dev.writeReg(sacc.RegCTRL, sacc.CtrlEnable)
	for dev.readReg(sacc.RegSTATUS)&(sacc.StatusReady|sacc.StatusError) == 0 {
		dev.k.CPU.Delay(500)
	}
	if dev.readReg(sacc.RegSTATUS)&sacc.StatusError != 0 {
		dev.stop(sacc.CtrlReset) // the device may not touch the rings we unmap
		dev.unmapUser(p, sm)
		dev.unmapUser(p, cm)
		dev.Reset()
		return kernel.EIO
	}
	dev.bypass = &bypassState{owner: f, sq: sm, cq: cm}
	dev.pdev.Info("queue handed to pid %d: %d-entry rings at dma %#x / %#x", p.PID, size, sm.dma, cm.dma)
	return nil
}

// releaseRings gives the queue back to the kernel. The device is stopped, and
// seen to stop (a STATUS read-back after the posted CTRL=0), before the user's
// rings are unmapped and unpinned; the process's doorbell mappings are revoked,
// so a stale one cannot ring the kernel's queue.
func (dev *Device) releaseRings() error {
	b := dev.bypass
	if !dev.stop(0) {
		return kernel.EIO // the rings stay mapped and pinned: the device may use them
	}
	dev.bypass = nil
	dev.revokeUserMappings(false)
	dev.unmapUser(b.owner.Proc, b.sq)
	dev.unmapUser(b.owner.Proc, b.cq)
	dev.pdev.Info("queue returned to the kernel")
	return dev.restart()
}
