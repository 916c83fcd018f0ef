// Exercise 07-dma-sync: DMA on a CPU whose cache the device cannot see.
//
// On this machine the device reads and writes memory directly, and the CPU's
// cache knows nothing about it: a non-coherent system, as many arm boards are.
// Write Copy, which hands a buffer to the device and takes the result back
// with the two syncs of the streaming DMA API.
//
// What you need to know (chapter 7; Linux's Documentation/core-api/dma-api.rst):
//
//   - the CPU's stores to a buffer sit in dirty cache lines, so the device,
//     which reads memory, reads the old bytes. dma_sync_single_for_device
//     (dma.DMASyncSingleForDevice) cleans those lines: it writes them back;
//   - the CPU may hold old lines of a buffer in its cache, so after the device
//     wrote memory the CPU still reads the old bytes. dma_sync_single_for_cpu
//     (dma.DMASyncSingleForCPU) invalidates those lines, so the next load reads
//     memory. A line the CPU brings back into the cache before the device has
//     finished writing is old again: the sync for the CPU belongs after the
//     device is done;
//   - both syncs take the buffer's DMA address and its direction (Src is mapped
//     DMA_TO_DEVICE, Dst DMA_FROM_DEVICE), never its CPU address; with an IOMMU
//     the two differ;
//   - both buffers are streaming mappings that stay mapped between copies, as a
//     driver that reuses its buffers keeps them: dma_map_single cleaned them
//     once, at mapping time, and every handover since needs its own sync.
//
// The contract the tests hold Copy to (three copies through the same buffers,
// the destination's old bytes in the cache before each, with and without an
// IOMMU):
//
//   - it stores data into b.Src, calls run once with the DMA addresses and
//     len(data), and returns what the CPU then reads from b.Dst, which must be
//     what the device copied;
//   - the device must have read data, not the bytes memory held before;
//   - the destination's lines are invalidated after the device has written it
//     (the tests check the order in the trace);
//   - an error from run is returned.
//
// Edit this file, then run:
//
//	go test ./exercises/07-dma-sync/
//	saccbook check 07-dma-sync
package dmasync

import (
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// DMA is the part of the DMA API a driver needs here (*kernel.PCIDev has both).
type DMA interface {
	DMASyncSingleForDevice(dmaAddr, size uint64, dir kernel.Direction)
	DMASyncSingleForCPU(dmaAddr, size uint64, dir kernel.Direction)
}

// Buffers are two mapped buffers: Src is mapped DMA_TO_DEVICE at SrcDMA, Dst is
// mapped DMA_FROM_DEVICE at DstDMA. Src and Dst are CPU addresses.
type Buffers struct {
	Src, SrcDMA uint64
	Dst, DstDMA uint64
}

// Copy stores data into b.Src, has the device copy it to b.Dst through run
// (which submits a MEMCPY and waits for it), and returns what the CPU then
// reads from b.Dst.
func Copy(c *cpu.CPU, dma DMA, run func(src, dst uint64, n uint32) error, b Buffers, data []byte) ([]byte, error) {
	n := uint64(len(data))
	c.StoreBytes(b.Src, data)
	if err := run(b.SrcDMA, b.DstDMA, uint32(n)); err != nil {
		return nil, err
	}
	dma.DMASyncSingleForCPU(b.DstDMA, n, kernel.DMAFromDevice) // invalidate: no stale lines
	out := make([]byte, n)
	c.LoadBytes(b.Dst, out)
	return out, nil
}
