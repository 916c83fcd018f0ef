// Exercise 04-coherent-rings: allocate the rings and tell the device where they are.
//
// Both rings live in host memory, and both sides use them: the CPU writes
// descriptors and reads completions, the device reads descriptors and writes
// completions, by DMA. So the memory has two addresses (specification §6, §10):
//
//   - the CPU address, which the driver's loads and stores use;
//   - the DMA address, which the device puts on the bus. Without an IOMMU it is
//     the physical address; with one it is an I/O virtual address that only the
//     IOMMU can translate.
//
// dma_alloc_coherent gives both at once, for memory that the CPU and the device
// see alike without any sync step, already zeroed: here pdev.DMAAllocCoherent(size)
// returns (cpuAddr, dmaAddr, err). The registers take DMA addresses only:
// SQ_BASE (BAR0 0x10, 64 bits) and CQ_BASE (0x20), with SQ_SIZE (0x18) and CQ_SIZE
// (0x28) in entries. A descriptor is 32 bytes and a completion 16
// (sacc.DescriptorSize, sacc.CompletionSize), so the two rings are not the same
// size. Ring sizes must be powers of two from 2 to 4096 (§7.5).
//
// Linux drivers do exactly this in probe: NVMe allocates each queue with
// dma_alloc_coherent and writes the dma_addr_t into the controller's registers.
//
// Edit this file, then run:
//
//	go test ./exercises/04-coherent-rings/
//	saccbook check 04-coherent-rings
package coherentrings

import (
	"errors"

	"github.com/saccbook/saccbook/sacc/kernel"
)

// Rings is what a driver keeps about its two rings: both addresses of each.
type Rings struct {
	SQCPU, SQDMA uint64 // the submission ring: CPU address, DMA address
	CQCPU, CQDMA uint64 // the completion ring: CPU address, DMA address
	Size         uint32 // entries in each ring
}

// SetUpRings allocates a submission ring of size descriptors and a completion
// ring of size entries with dma_alloc_coherent (pdev.DMAAllocCoherent), and
// programs SQ_BASE, SQ_SIZE, CQ_BASE and CQ_SIZE through regs (BAR0, mapped)
// so that the device will use them. It does not set CTRL.ENABLE: the caller
// does that.
//
// If size is not a power of two from 2 to 4096 (sacc.MinRingSize,
// sacc.MaxRingSize), SetUpRings returns an error and allocates and writes
// nothing. If the second allocation fails, it frees the first.
func SetUpRings(pdev *kernel.PCIDev, regs *kernel.IOMem, size uint32) (Rings, error) {
	// TODO: check size, allocate both rings, program the four ring registers
	// with the DMA addresses.
	return Rings{}, errors.New("SetUpRings is not written yet: this is your exercise")
}
