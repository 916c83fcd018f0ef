// Exercise 04-dma-copy: let the device move the bytes.
//
// A MEMCPY descriptor (specification §6.1, §6.3) tells the device to read length
// bytes at src_addr and write them at dst_addr, by DMA: the CPU moves none of
// them. Both addresses are DMA addresses, the ones the device puts on the bus
// (§10). The CPU, meanwhile, fills the source and reads the result through its
// own addresses. So every buffer has two:
//
//	cpuAddr, dmaAddr, err := pdev.DMAAllocCoherent(n)   // dma_alloc_coherent
//	pdev.DMAFreeCoherent(n, cpuAddr, dmaAddr)           // dma_free_coherent
//
// Without an IOMMU the two happen to be equal on this machine; with one they
// never are, and a CPU address in a descriptor makes the IOMMU block the access:
// the command completes with status 2, bad address.
//
// Submitting the descriptor and waiting for its completion is done for you by
// dev.Run (that is chapters 3, 5 and 6). Its doorbell comes after a write
// barrier, so what the CPU stored before calling Run is in memory when the device
// looks. A completion whose status is not 0 (sacc.StatusOK) means the command
// failed (§8).
//
// Edit this file, then run:
//
//	go test ./exercises/04-dma-copy/
//	saccbook check 04-dma-copy
package dmacopy

import (
	"errors"
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// Device runs one descriptor to completion: it puts d in the submission ring,
// rings the doorbell, waits for the completion and returns it. It returns an
// error only when no completion came at all.
type Device interface {
	Run(d sacc.Descriptor) (sacc.Completion, error)
}

// Copy has the device copy src into fresh memory and returns the bytes the
// device wrote there, read back by the CPU.
//
// It allocates a source and a destination buffer of len(src) bytes with
// dma_alloc_coherent, stores src into the source with the CPU, runs one MEMCPY
// from source to destination on dev, reads the destination with the CPU, and
// frees both buffers, whatever happened. An empty src, an error from dev.Run and
// a completion with a status other than OK are errors.
func Copy(c *cpu.CPU, pdev *kernel.PCIDev, dev Device, src []byte) ([]byte, error) {
	n := uint64(len(src))
	if n == 0 {
		return nil, errors.New("nothing to copy")
	}
	srcCPU, srcDMA, err := pdev.DMAAllocCoherent(n)
	if err != nil {
		return nil, err
	}
	defer pdev.DMAFreeCoherent(n, srcCPU, srcDMA)
	dstCPU, dstDMA, err := pdev.DMAAllocCoherent(n)
	if err != nil {
		return nil, err
	}
	defer pdev.DMAFreeCoherent(n, dstCPU, dstDMA)

	c.StoreBytes(srcCPU, src) // the CPU fills the source through its own address
	cpl, err := dev.Run(sacc.Descriptor{Src: srcDMA, Dst: dstDMA, Length: uint32(n), Opcode: sacc.OpMEMCPY})
	if err != nil {
		return nil, err
	}
	if cpl.Status != sacc.StatusOK {
		return nil, fmt.Errorf("MEMCPY failed: status %d (%v)", cpl.Status, cpl.Status)
	}
	out := make([]byte, n)
	c.LoadBytes(dstCPU, out) // and reads the result through its own address
	return out, nil
}
