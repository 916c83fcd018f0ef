// Exercise 09-remap-iova: point an IOVA at a new page, and make the IOMMU forget
// the old one.
//
// The IOMMU keeps the translations it made in its IOTLB, and the IOTLB does not
// watch the page tables. After the kernel changes a leaf entry, the IOMMU goes
// on using the copy it cached, and the device's next write lands in the old
// page, which may belong to someone else by now. Write Remap, the change of a
// mapping that is in use, as Linux's IOMMU drivers do it with an IOTLB flush.
//
// What you need to know (docs/SPEC.md §10 "I/O page tables", "IOTLB",
// "Registers"):
//
//   - the tables have four levels of 512 entries of 8 bytes, root at the top;
//     sacc.IOVAIndex(iova, level) is the index at each level, sacc.PTE(v)
//     .Present() and .Addr() read an entry, sacc.MakePTE(phys, perm) builds one;
//   - the IOTLB holds up to 32 leaf translations; writing a value to INVALIDATE
//     (sacc.IOMMUBase + sacc.IOMMURegInvalidate, 64 bits, c.Writeq) drops the
//     entry of the IOVA page value &^ 0xFFF, and all ones (sacc.InvalidateAll)
//     drops every entry;
//   - the IOMMU walks the tables in RAM, not the CPU's store buffer: a new entry
//     must be in RAM before the IOMMU may walk again. c.WMB() drains the store
//     buffer; c.Writeq, like writel, drains it before the write.
//
// The contract the tests hold Remap to (on x86 and arm64, with the device's
// translation of iova in the IOTLB):
//
//   - from the moment Remap returns, every DMA to iova reaches newPhys, with the
//     rights perm (sacc.PTERead, sacc.PTEWrite, or both), and the tables in RAM
//     say so;
//   - the invalidation comes after the new entry has reached RAM (the tests
//     check the order in the trace): before that, a DMA could cache the old
//     translation again;
//   - only the leaf entry of iova changes: every other mapping keeps working;
//   - if iova is not mapped (some level of the walk from root is absent,
//     the leaf included), Remap returns an error and writes nothing.
//
// Edit this file, then run:
//
//	go test ./exercises/09-remap-iova/
//	saccbook check 09-remap-iova
package remapiova

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
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
// perm.
func Remap(c CPU, root, iova, newPhys, perm uint64) error {
	page := iova &^ uint64(sacc.PageMask)
	table := root
	for level := 0; level < sacc.IOPTLevels-1; level++ {
		e := sacc.PTE(c.Load64(table + sacc.IOVAIndex(page, level)*sacc.IOPTEntrySize))
		if !e.Present() {
			return fmt.Errorf("remap %#x: not mapped (level %d absent)", iova, level)
		}
		table = e.Addr()
	}
	leaf := table + sacc.IOVAIndex(page, sacc.IOPTLevels-1)*sacc.IOPTEntrySize
	c.Store64(leaf, uint64(sacc.MakePTE(newPhys, perm)))
	c.WMB() // the new entry is in RAM before the IOMMU may walk again
	c.Writeq(sacc.IOMMUBase+sacc.IOMMURegInvalidate, page)
	return nil
}
