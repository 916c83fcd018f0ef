// Exercise 04-coherent-rings: allocate the rings and tell the device where they are.
//
// Both rings live in host memory, and both sides use them: the CPU writes
// descriptors and reads completions, the device reads descriptors and writes
// completions, by DMA. Write SetUpRings, the part of a probe that NVMe drivers
// do for each queue: allocate it with dma_alloc_coherent and write the
// dma_addr_t into the controller's registers.
//
// What you need to know (docs/SPEC.md §5, §6.1, §6.2, §7.5, §10):
//
//   - memory the device uses has two addresses: the CPU address, which the
//     driver's loads and stores use, and the DMA address, which the device puts
//     on the bus. Without an IOMMU the DMA address is the physical address; with
//     one it is an I/O virtual address that only the IOMMU translates, and the
//     CPU address means nothing to the device;
//   - pdev.DMAAllocCoherent(n) is dma_alloc_coherent: n bytes that the CPU and
//     the device see alike without any sync step, zeroed, page aligned,
//     returned as (cpuAddr, dmaAddr, err); pdev.DMAFreeCoherent(n, cpuAddr,
//     dmaAddr) gives them back;
//   - a descriptor is 32 bytes and a completion 16 (sacc.DescriptorSize,
//     sacc.CompletionSize), so the two rings are not the same size;
//   - SQ_BASE (0x10, 64 bits) and CQ_BASE (0x20) take DMA addresses; SQ_SIZE
//     (0x18) and CQ_SIZE (0x28) take sizes in entries, which must be powers of
//     two from 2 to 4096 (sacc.MinRingSize, sacc.MaxRingSize).
//
// The contract the tests hold SetUpRings to (with and without an IOMMU):
//
//   - it returns both addresses of both rings: the CPU address and the DMA
//     address of each name the same memory, all of the ring;
//   - the four ring registers hold the DMA addresses and size; CTRL.ENABLE is
//     left to the caller;
//   - a size that is not a power of two from 2 to 4096 is an error: nothing
//     allocated, no register written;
//   - if an allocation fails, SetUpRings returns an error and leaves nothing
//     allocated.
//
// Edit this file, then run:
//
//	go test ./exercises/04-coherent-rings/
//	saccbook check 04-coherent-rings
package coherentrings

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// Rings is what a driver keeps about its two rings: both addresses of each.
type Rings struct {
	SQCPU, SQDMA uint64 // the submission ring: CPU address, DMA address
	CQCPU, CQDMA uint64 // the completion ring: CPU address, DMA address
	Size         uint32 // entries in each ring
}

// SetUpRings allocates a submission ring and a completion ring of size entries
// each and programs the device's ring registers with them, without enabling it.
func SetUpRings(pdev *kernel.PCIDev, regs *kernel.IOMem, size uint32) (Rings, error) {
	if !sacc.IsPowerOfTwo(uint64(size)) {
		return Rings{}, fmt.Errorf("ring size %d: want a power of two from %d to %d", size, sacc.MinRingSize, sacc.MaxRingSize)
	}
	r := Rings{Size: size}
	sqBytes := uint64(size) * sacc.DescriptorSize
	cqBytes := uint64(size) * sacc.CompletionSize
	var err error
	if r.SQCPU, r.SQDMA, err = pdev.DMAAllocCoherent(sqBytes); err != nil {
		return Rings{}, fmt.Errorf("allocate the SQ: %w", err)
	}
	if r.CQCPU, r.CQDMA, err = pdev.DMAAllocCoherent(cqBytes); err != nil {
		pdev.DMAFreeCoherent(sqBytes, r.SQCPU, r.SQDMA)
		return Rings{}, fmt.Errorf("allocate the CQ: %w", err)
	}
	// The device only ever sees DMA addresses.
	regs.Writel(sacc.RegSQBaseLo, uint32(r.SQDMA))
	regs.Writel(sacc.RegSQBaseHi, uint32(r.SQDMA>>32))
	regs.Writel(sacc.RegSQSize, size)
	regs.Writel(sacc.RegCQBaseLo, uint32(r.CQDMA))
	regs.Writel(sacc.RegCQBaseHi, uint32(r.CQDMA>>32))
	regs.Writel(sacc.RegCQSize, size)
	return r, nil
}
