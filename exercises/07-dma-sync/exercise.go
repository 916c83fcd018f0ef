// Exercise 07-dma-sync: DMA on a CPU whose cache the device cannot see.
//
// On this machine the device reads and writes memory directly, and the CPU's
// cache knows nothing about it (a non-coherent system, as many arm boards are).
// Two things go wrong:
//
//   - the CPU's stores to a buffer sit in dirty cache lines, so the device reads
//     the old bytes from memory. dma_sync_single_for_device cleans (writes back)
//     the lines first;
//   - the CPU has old lines of a buffer in its cache, so after the device wrote
//     memory the CPU still reads the old bytes. dma_sync_single_for_cpu
//     invalidates those lines first.
//
// Both buffers here are streaming mappings that stay mapped between copies, as a
// driver that reuses its buffers keeps them. dma_map_single cleaned them once, at
// mapping time; every handover since needs its own sync.
//
// Edit this file, then run:
//
//	go test ./exercises/07-dma-sync/
//	saccbook check 07-dma-sync
package dmasync

import (
	"errors"

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

// Copy stores data into b.Src, has the device copy len(data) bytes from SrcDMA to
// DstDMA by calling run (which submits a MEMCPY and waits for it), and returns
// what the CPU then reads from b.Dst.
func Copy(c *cpu.CPU, dma DMA, run func(src, dst uint64, n uint32) error, b Buffers, data []byte) ([]byte, error) {
	// TODO: store, sync for the device, run, sync for the CPU, load.
	return nil, errors.New("Copy is not written yet: this is your exercise")
}
