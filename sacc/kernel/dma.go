package kernel

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/quirk"
)

// Direction is enum dma_data_direction.
type Direction uint8

const (
	DMABidirectional Direction = iota
	DMAToDevice                // the device reads: an IOMMU read-only mapping
	DMAFromDevice              // the device writes: an IOMMU write-only mapping
)

func (d Direction) String() string {
	return [...]string{"DMA_BIDIRECTIONAL", "DMA_TO_DEVICE", "DMA_FROM_DEVICE"}[d]
}

func (d Direction) perm() uint64 {
	switch d {
	case DMAToDevice:
		return sacc.PTERead
	case DMAFromDevice:
		return sacc.PTEWrite
	}
	return sacc.PTERead | sacc.PTEWrite
}

// IOVABase is where the kernel starts handing out I/O virtual addresses: far from
// RAM, so a DMA address is visibly not a physical one.
const IOVABase = 0x8000_0000

// domain is the IOMMU domain every device is attached to: one set of I/O page
// tables, an IOVA allocator, and the invalidation policy.
type domain struct {
	k        *Kernel
	root     uint64
	faultLog uint64
	iova     pageAllocator     // over the IOVA space, not RAM
	phys     map[uint64]uint64 // IOVA page → physical page, what is mapped now
	lazy     []uint64          // IOVA pages unmapped but not yet invalidated
	lazyIOVA []physRange       // their IOVA ranges, freed only once invalidated
}

const (
	faultLogEntries = 64
	lazyBatch       = 32 // a lazy flush happens after this many unmaps
)

func (k *Kernel) newDomain() (*domain, error) {
	d := &domain{k: k, phys: map[uint64]uint64{}}
	d.iova.free = []physRange{{IOVABase, sacc.IOVALimit - IOVABase}}
	var err error
	if d.root, err = k.allocTable(); err != nil {
		return nil, err
	}
	if d.faultLog, err = k.AllocPages(faultLogEntries * sacc.FaultRecordSize); err != nil {
		return nil, err
	}
	c, base := k.CPU, uint64(sacc.IOMMUBase)
	c.Writeq(base+sacc.IOMMURegPTRoot, d.root)
	c.Writeq(base+sacc.IOMMURegFaultBase, d.faultLog)
	c.Writel(base+sacc.IOMMURegFaultSize, faultLogEntries)
	c.Writel(base+sacc.IOMMURegFaultHead, 0)
	c.Writeq(base+sacc.IOMMURegInvalidate, sacc.InvalidateAll)
	c.Writel(base+sacc.IOMMURegCTRL, sacc.IOMMUCtrlTranslate)
	return d, nil
}

// allocTable takes a zeroed page for an I/O page table. The IOMMU walks tables in
// memory, so on a non-coherent system they are mapped uncached.
func (k *Kernel) allocTable() (uint64, error) {
	p, err := k.AllocPages(sacc.PageSize)
	if err != nil {
		return 0, err
	}
	if k.CPU.NonCoherent() {
		k.CPU.SetUncached(p, sacc.PageSize)
	}
	return p, nil
}

// mapPage installs IOVA page → physical page with perm (iommu_map).
func (d *domain) mapPage(iova, phys, perm uint64) error {
	c := d.k.CPU
	table := d.root
	for level := 0; level < sacc.IOPTLevels-1; level++ {
		slot := table + sacc.IOVAIndex(iova, level)*sacc.IOPTEntrySize
		e := sacc.PTE(c.Load64(slot))
		if !e.Present() {
			next, err := d.k.allocTable()
			if err != nil {
				return err
			}
			e = sacc.MakePTE(next, sacc.PTERead|sacc.PTEWrite)
			c.Store64(slot, uint64(e))
		}
		table = e.Addr()
	}
	c.Store64(table+sacc.IOVAIndex(iova, sacc.IOPTLevels-1)*sacc.IOPTEntrySize, uint64(sacc.MakePTE(phys, perm)))
	d.phys[iova&^sacc.PageMask] = phys &^ sacc.PageMask
	return nil
}

// unmapPage clears a leaf (iommu_unmap); the IOTLB may still hold it.
func (d *domain) unmapPage(iova uint64) {
	c := d.k.CPU
	table := d.root
	for level := 0; level < sacc.IOPTLevels-1; level++ {
		e := sacc.PTE(c.Load64(table + sacc.IOVAIndex(iova, level)*sacc.IOPTEntrySize))
		if !e.Present() {
			return
		}
		table = e.Addr()
	}
	c.Store64(table+sacc.IOVAIndex(iova, sacc.IOPTLevels-1)*sacc.IOPTEntrySize, 0)
	delete(d.phys, iova&^sacc.PageMask)
}

// invalidate flushes IOVA pages from the IOTLB, now (strict) or in a batch later
// (lazy).
func (d *domain) invalidate(pages []uint64) {
	k := d.k
	if k.cfg.Quirks.Has(quirk.NoIOTLBInvalidate) {
		return // the bug: the IOTLB keeps translations the tables no longer have
	}
	if k.cfg.LazyUnmap {
		d.lazy = append(d.lazy, pages...)
		if len(d.lazy) >= lazyBatch {
			k.FlushIOTLB()
		}
		return
	}
	for _, p := range pages {
		k.CPU.Writeq(sacc.IOMMUBase+sacc.IOMMURegInvalidate, p)
		k.Stats.IOTLBFlushes++
	}
}

// FlushIOTLB performs the pending lazy invalidations with one global flush.
func (k *Kernel) FlushIOTLB() {
	if k.dom == nil || len(k.dom.lazy) == 0 {
		return
	}
	k.dom.lazy = k.dom.lazy[:0]
	k.CPU.Writeq(sacc.IOMMUBase+sacc.IOMMURegInvalidate, sacc.InvalidateAll)
	k.Stats.IOTLBFlushes++
	for _, r := range k.dom.lazyIOVA {
		k.dom.iova.release(r.base, r.size)
	}
	k.dom.lazyIOVA = k.dom.lazyIOVA[:0]
}

// IOMMUOn reports whether DMA addresses are IOVAs.
func (k *Kernel) IOMMUOn() bool { return k.dom != nil }

// IOMMUMappings counts the IOVA pages the domain maps now (0 without an IOMMU).
func (k *Kernel) IOMMUMappings() int {
	if k.dom == nil {
		return 0
	}
	return len(k.dom.phys)
}

// mapRange maps [phys, phys+n) at a fresh IOVA range no higher than limit and
// returns the IOVA of phys.
func (d *domain) mapRange(phys, n, perm, limit uint64, firstPageOnly bool) (uint64, error) {
	off := phys & sacc.PageMask
	span := pageRound(off + n)
	base, err := d.iova.allocBelow(span, sacc.PageSize, limit)
	if err != nil {
		return 0, fmt.Errorf("IOVA space exhausted: %w", err)
	}
	for p := uint64(0); p < span; p += sacc.PageSize {
		if firstPageOnly && p > 0 {
			break // the bug: the rest of the buffer is not mapped
		}
		if err := d.mapPage(base+p, phys-off+p, perm); err != nil {
			return 0, err
		}
	}
	d.k.CPU.WMB() // the tables are in memory before the device may use them
	return base + off, nil
}

func (d *domain) unmapRange(iova, n uint64) {
	off := iova & sacc.PageMask
	span := pageRound(off + n)
	var pages []uint64
	for p := uint64(0); p < span; p += sacc.PageSize {
		d.unmapPage(iova - off + p)
		pages = append(pages, iova-off+p)
	}
	d.k.CPU.WMB()
	if d.k.cfg.LazyUnmap && !d.k.cfg.Quirks.Has(quirk.NoIOTLBInvalidate) {
		// As Linux's flush queue does, the IOVA range is reused only after the
		// flush: a new mapping there would hit the stale IOTLB entry and reach
		// the old pages.
		d.lazyIOVA = append(d.lazyIOVA, physRange{iova - off, span})
		d.invalidate(pages)
		return
	}
	d.invalidate(pages)
	d.iova.release(iova-off, span)
}

// physOf is the physical address behind a DMA address of this kernel.
func (k *Kernel) physOf(dma uint64) (uint64, bool) {
	if k.dom == nil {
		return dma, true
	}
	p, ok := k.dom.phys[dma&^sacc.PageMask]
	return p | dma&sacc.PageMask, ok
}

// DMABitMask is DMA_BIT_MASK(n): every address n bits can hold.
func DMABitMask(n uint) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return 1<<n - 1
}

// DMASetMaskAndCoherent is dma_set_mask_and_coherent: the device can reach DMA
// addresses up to mask, for streaming mappings and coherent memory alike (this
// kernel keeps one mask for both). From then on every allocation and mapping for
// the device stays at or below it. It fails with EIO, and keeps the old mask, when
// the platform could hand out no DMA address below mask at all.
func (d *PCIDev) DMASetMaskAndCoherent(mask uint64) error {
	if err := d.k.shouldFail("dma_set_mask_and_coherent"); err != nil {
		return err
	}
	// The lowest DMA address this kernel hands out: the first allocatable page
	// of RAM, or the start of the IOVA space behind the IOMMU.
	lowest := uint64(reservedLow)
	if d.k.dom != nil {
		lowest = IOVABase
	}
	if mask < lowest+sacc.PageSize-1 {
		return fmt.Errorf("DMA mask %#x: the platform has no DMA address below %#x: %w", mask, lowest+sacc.PageSize, EIO)
	}
	d.dmaMask = mask
	return nil
}

// DMAMask is the highest DMA address the device can reach (32 bits until its
// driver sets a mask).
func (d *PCIDev) DMAMask() uint64 { return d.dmaMask }

// reachable checks, for a mapping without an IOMMU, that the device can reach
// every byte of [phys, phys+n): this kernel has no bounce buffers (swiotlb) to
// copy through, so an address beyond the mask cannot be mapped.
func (d *PCIDev) reachable(phys, n uint64) error {
	if n > 0 && phys+n-1 > d.dmaMask {
		return fmt.Errorf("DMA address %#x+%#x is beyond the device's mask %#x (no bounce buffer): %w", phys, n, d.dmaMask, EIO)
	}
	return nil
}

// DMAAllocCoherent is dma_alloc_coherent: memory both sides see without syncs
// (uncached on a non-coherent system), with its CPU address and its DMA address,
// which the device's mask can reach.
func (d *PCIDev) DMAAllocCoherent(size uint64) (cpuAddr, dmaAddr uint64, err error) {
	k := d.k
	if err := k.shouldFail("dma_alloc_coherent"); err != nil {
		return 0, 0, err
	}
	limit := noLimit // behind the IOMMU the IOVA, not the page, must be reachable
	if k.dom == nil {
		limit = d.dmaMask
	}
	p, err := k.allocPagesBelow(size, limit)
	if err != nil {
		return 0, 0, err
	}
	if k.CPU.NonCoherent() {
		k.CPU.SetUncached(p, pageRound(size))
	}
	if k.dom == nil {
		return p, p, nil
	}
	iova, err := k.dom.mapRange(p, pageRound(size), sacc.PTERead|sacc.PTEWrite, d.dmaMask, false)
	if err != nil {
		k.FreePages(p, size)
		return 0, 0, err
	}
	return p, iova, nil
}

// DMAFreeCoherent is dma_free_coherent.
func (d *PCIDev) DMAFreeCoherent(size, cpuAddr, dmaAddr uint64) {
	k := d.k
	if k.dom != nil {
		k.dom.unmapRange(dmaAddr, pageRound(size))
	}
	if k.CPU.NonCoherent() {
		k.CPU.ClearUncached(cpuAddr, pageRound(size))
	}
	k.FreePages(cpuAddr, size)
}

// DMAMapSingle is dma_map_single: give the device a streaming mapping of a
// buffer the CPU filled (or will read back), by direction. On a non-coherent
// system it cleans the CPU cache so the device sees the buffer.
func (d *PCIDev) DMAMapSingle(cpuAddr, size uint64, dir Direction) (uint64, error) {
	k := d.k
	if k.dom == nil {
		if err := d.reachable(cpuAddr, size); err != nil {
			return 0, err
		}
	}
	if k.CPU.NonCoherent() && dir != DMAFromDevice {
		k.CPU.CleanRange(cpuAddr, size)
	}
	if k.dom == nil {
		return cpuAddr, nil
	}
	return k.dom.mapRange(cpuAddr, size, dir.perm(), d.dmaMask, k.cfg.Quirks.Has(quirk.FirstPageOnly))
}

// DMAUnmapSingle is dma_unmap_single. On a non-coherent system a buffer the
// device wrote is invalidated in the CPU cache so the CPU reads what arrived.
func (d *PCIDev) DMAUnmapSingle(dmaAddr, size uint64, dir Direction) {
	k := d.k
	phys, _ := k.physOf(dmaAddr)
	if k.CPU.NonCoherent() && dir != DMAToDevice {
		k.CPU.InvalidateRange(phys, size)
	}
	if k.dom != nil {
		k.dom.unmapRange(dmaAddr, size)
	}
}

// DMASyncSingleForCPU is dma_sync_single_for_cpu: before the CPU reads a buffer
// the device wrote.
func (d *PCIDev) DMASyncSingleForCPU(dmaAddr, size uint64, dir Direction) {
	if phys, ok := d.k.physOf(dmaAddr); ok && d.k.CPU.NonCoherent() && dir != DMAToDevice {
		d.k.CPU.InvalidateRange(phys, size)
	}
}

// DMASyncSingleForDevice is dma_sync_single_for_device: before the device reads
// a buffer the CPU wrote.
func (d *PCIDev) DMASyncSingleForDevice(dmaAddr, size uint64, dir Direction) {
	if phys, ok := d.k.physOf(dmaAddr); ok && d.k.CPU.NonCoherent() && dir != DMAFromDevice {
		d.k.CPU.CleanRange(phys, size)
	}
}

// SG is one entry of a scatterlist (struct scatterlist): a physical piece, and
// after mapping the DMA address and length the device should use.
type SG struct {
	Phys, Len       uint64
	DMAAddr, DMALen uint64
}

// DMAMapSG is dma_map_sg. Behind the IOMMU the pieces become one contiguous IOVA
// range, so the device needs one address however scattered the pages are; entry 0
// then carries it and the count returned is 1. Without an IOMMU each piece keeps
// its own address. Pieces after the first must start on a page; all but the last
// must end on one.
func (d *PCIDev) DMAMapSG(sg []SG, dir Direction) (int, error) {
	k := d.k
	for i := range sg {
		if k.CPU.NonCoherent() && dir != DMAFromDevice {
			k.CPU.CleanRange(sg[i].Phys, sg[i].Len)
		}
		if (i > 0 && sg[i].Phys&sacc.PageMask != 0) || (i < len(sg)-1 && (sg[i].Phys+sg[i].Len)&sacc.PageMask != 0) {
			return 0, fmt.Errorf("scatterlist entry %d is not page-aligned in the middle of the list", i)
		}
	}
	if k.dom == nil {
		for _, e := range sg {
			if err := d.reachable(e.Phys, e.Len); err != nil {
				return 0, err
			}
		}
		for i := range sg {
			sg[i].DMAAddr, sg[i].DMALen = sg[i].Phys, sg[i].Len
		}
		return len(sg), nil
	}
	var total uint64
	off := sg[0].Phys & sacc.PageMask
	for _, e := range sg {
		total += e.Len
	}
	span := pageRound(off + total)
	base, err := k.dom.iova.allocBelow(span, sacc.PageSize, d.dmaMask)
	if err != nil {
		return 0, fmt.Errorf("IOVA space exhausted: %w", err)
	}
	at := base
	for _, e := range sg {
		first := e.Phys &^ sacc.PageMask
		last := (e.Phys + e.Len - 1) &^ sacc.PageMask
		for p := first; p <= last; p += sacc.PageSize {
			if err := k.dom.mapPage(at, p, dir.perm()); err != nil {
				return 0, err
			}
			at += sacc.PageSize
		}
	}
	k.CPU.WMB()
	for i := range sg {
		sg[i].DMAAddr, sg[i].DMALen = 0, 0
	}
	sg[0].DMAAddr, sg[0].DMALen = base+off, total
	return 1, nil
}

// DMAUnmapSG is dma_unmap_sg.
func (d *PCIDev) DMAUnmapSG(sg []SG, dir Direction) {
	k := d.k
	for _, e := range sg {
		if k.CPU.NonCoherent() && dir != DMAToDevice {
			k.CPU.InvalidateRange(e.Phys, e.Len)
		}
	}
	if k.dom != nil && sg[0].DMALen > 0 {
		k.dom.unmapRange(sg[0].DMAAddr, sg[0].DMALen)
	}
}
