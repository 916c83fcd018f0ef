package kernel

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
)

// The first megabyte is left to the firmware and to fixed test layouts, as on a PC.
const reservedLow = 1 << 20

// pageAllocator hands out physically contiguous runs of pages, first fit, from a
// list of free ranges kept sorted and coalesced (deterministic by construction).
type pageAllocator struct {
	free  []physRange
	inUse uint64
}

type physRange struct{ base, size uint64 }

func (a *pageAllocator) init(ramSize uint64) {
	a.free = []physRange{{reservedLow, ramSize - reservedLow}}
}

// alloc returns n bytes (rounded up to pages), aligned to align (a power of two ≥
// 4 KiB).
func (a *pageAllocator) alloc(n, align uint64) (uint64, error) {
	return a.allocBelow(n, align, noLimit)
}

// noLimit is the highest address there is: an allocation anywhere.
const noLimit = ^uint64(0)

// allocBelow is alloc for a caller that can reach only addresses up to limit
// (inclusive): a device's DMA mask.
func (a *pageAllocator) allocBelow(n, align, limit uint64) (uint64, error) {
	n = pageRound(n)
	if align < sacc.PageSize {
		align = sacc.PageSize
	}
	for i, r := range a.free {
		base := (r.base + align - 1) &^ (align - 1)
		if n > 0 && base+n-1 > limit {
			break // the list is sorted: every later range lies higher still
		}
		if base+n > r.base+r.size {
			continue
		}
		// Split r into what lies before base, the allocation, and what follows.
		var keep []physRange
		if base > r.base {
			keep = append(keep, physRange{r.base, base - r.base})
		}
		if end := base + n; end < r.base+r.size {
			keep = append(keep, physRange{end, r.base + r.size - end})
		}
		a.free = append(a.free[:i], append(keep, a.free[i+1:]...)...)
		a.inUse += n
		return base, nil
	}
	if limit != noLimit {
		return 0, fmt.Errorf("out of memory: no %d contiguous bytes free below %#x", n, limit+1)
	}
	return 0, fmt.Errorf("out of memory: no %d contiguous bytes free", n)
}

// release returns a run to the free list.
func (a *pageAllocator) release(base, n uint64) {
	n = pageRound(n)
	a.inUse -= n
	i := 0
	for i < len(a.free) && a.free[i].base < base {
		i++
	}
	a.free = append(a.free[:i], append([]physRange{{base, n}}, a.free[i:]...)...)
	// Coalesce with the neighbours.
	if i+1 < len(a.free) && a.free[i].base+a.free[i].size == a.free[i+1].base {
		a.free[i].size += a.free[i+1].size
		a.free = append(a.free[:i+1], a.free[i+2:]...)
	}
	if i > 0 && a.free[i-1].base+a.free[i-1].size == a.free[i].base {
		a.free[i-1].size += a.free[i].size
		a.free = append(a.free[:i], a.free[i+1:]...)
	}
}

func pageRound(n uint64) uint64 { return (n + sacc.PageSize - 1) &^ (sacc.PageSize - 1) }

// AllocPages is the page allocator (alloc_pages): n bytes of contiguous, zeroed
// physical memory. The kernel's direct map makes its address the physical one.
func (k *Kernel) AllocPages(n uint64) (uint64, error) { return k.allocPagesBelow(n, noLimit) }

// allocPagesBelow is AllocPages for memory a device must reach without an IOMMU:
// every byte at or below limit.
func (k *Kernel) allocPagesBelow(n, limit uint64) (uint64, error) {
	p, err := k.mm.allocBelow(n, sacc.PageSize, limit)
	if err != nil {
		return 0, err
	}
	k.M.RAM().Fill(p, pageRound(n), 0) // zeroing is not modelled as CPU work
	if k.CPU.NonCoherent() {
		// The zeroing went around the CPU cache: lines a previous owner left
		// there would hide the zeros, or be written back over them later.
		k.CPU.InvalidateRange(p, pageRound(n))
	}
	return p, nil
}

// FreePages returns memory from AllocPages.
func (k *Kernel) FreePages(p, n uint64) { k.mm.release(p, n) }

// MemInUse is how many bytes are allocated.
func (k *Kernel) MemInUse() uint64 { return k.mm.inUse }
