// Exercise 04-dma-copy: let the device move the bytes.
//
// A MEMCPY descriptor tells the device to read length bytes at src_addr and
// write them at dst_addr, by DMA: the CPU moves none of them. The CPU fills the
// source beforehand and reads the result afterwards, each through its own
// addresses. Write Copy.
//
// What you need to know (docs/SPEC.md §6.1, §6.3, §8, §10):
//
//   - a buffer the device uses has two addresses:
//
//     cpuAddr, dmaAddr, err := pdev.DMAAllocCoherent(n)   // dma_alloc_coherent
//     pdev.DMAFreeCoherent(n, cpuAddr, dmaAddr)           // dma_free_coherent
//
//     The CPU's loads and stores (c.StoreBytes, c.LoadBytes) take CPU
//     addresses; a descriptor carries DMA addresses. Without an IOMMU the two
//     happen to be equal on this machine; with one they never are, and a CPU
//     address in a descriptor makes the IOMMU block the access: the command
//     completes with status 2, bad address;
//
//   - MEMCPY's length is 1 byte to 1 MiB (sacc.MaxLength); 0 is invalid;
//
//   - dev.Run submits one descriptor and waits for its completion (chapters 3,
//     5 and 6): its doorbell comes after a write barrier, so what the CPU stored
//     before calling Run is in memory when the device looks. It returns an
//     error only when no completion came at all; a completion whose status is
//     not 0 (sacc.StatusOK) is a command that failed (§8).
//
// The contract the tests hold Copy to (with and without an IOMMU, across
// pages):
//
//   - it returns the bytes the device wrote into the destination, read back by
//     the CPU after the copy; the CPU does not write the destination after the
//     device has;
//   - the device sees exactly one MEMCPY of len(src) bytes, from the source's
//     DMA address to the destination's;
//   - an empty src, an error from dev.Run, a failed completion and a failed
//     allocation are errors, and then Copy returns no bytes;
//   - when Copy returns, both buffers are freed, whatever happened.
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
// device wrote there.
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
	return append([]byte(nil), src...), nil
}
