// Exercise 09-remap-iova: point an IOVA at a new page, and make the IOMMU forget
// the old one.
//
// The IOMMU keeps the translations it made in its IOTLB (32 entries), and the
// IOTLB does not watch the page tables (specification §10). After the kernel
// changes or removes a leaf entry, the IOMMU goes on using the copy it cached
// until software writes the IOVA to the INVALIDATE register (sacc.IOMMUBase +
// sacc.IOMMURegInvalidate, 64 bits): any value flushes the entry of the page
// value &^ 0xFFF, and all ones (sacc.InvalidateAll) flushes every entry.
//
// So changing a mapping is three steps, in this order: write the new leaf
// entry, make sure it is in RAM (a write barrier: the IOMMU walks RAM, not the
// CPU's store buffer), then invalidate. Forget the last step and the device's
// next write lands in the old page, which may belong to someone else by now.
//
// The tables have four levels of 512 entries of 8 bytes; sacc.IOVAIndex(iova,
// level) is the index at each level, sacc.PTE(v).Present() and .Addr() read an
// entry, sacc.MakePTE(phys, perm) builds one.
//
// Edit this file, then run:
//
//	go test ./exercises/09-remap-iova/
//	saccbook check 09-remap-iova
package remapiova

import (
	"errors"
)

// CPU is what Remap needs: 64-bit loads and stores of physical memory, a write
// barrier, and 64-bit MMIO writes for the IOMMU's registers. *cpu.CPU has all four.
type CPU interface {
	Load64(addr uint64) uint64
	Store64(addr uint64, v uint64)
	WMB()
	Writeq(addr uint64, v uint64)
}

// Remap makes the 4 KiB IOVA page iova, which is mapped and which the device may
// have used already, translate to the physical page newPhys with the rights
// perm (sacc.PTERead, sacc.PTEWrite, or both). From the moment Remap returns,
// every DMA to iova must reach newPhys.
//
// If iova is not mapped (some level of the walk from root is absent), Remap
// returns an error and writes nothing.
func Remap(c CPU, root, iova, newPhys, perm uint64) error {
	// TODO: walk to the leaf entry of iova; write the new entry; barrier;
	// invalidate the IOTLB entry for iova.
	return errors.New("Remap is not written yet: this is your exercise")
}
