// Exercise 09-remap-iova: point an IOVA at a new page, and make the IOMMU forget
// the old one.
//
// This is the reference solution; the exercise's file explains the task.
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
// perm (sacc.PTERead, sacc.PTEWrite, or both). From the moment Remap returns,
// every DMA to iova must reach newPhys.
//
// If iova is not mapped (some level of the walk from root is absent), Remap
// returns an error and writes nothing.
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
	if !sacc.PTE(c.Load64(leaf)).Present() {
		return fmt.Errorf("remap %#x: not mapped", iova)
	}
	c.Store64(leaf, uint64(sacc.MakePTE(newPhys, perm)))
	c.WMB() // the new entry is in RAM before the IOMMU may walk again
	c.Writeq(sacc.IOMMUBase+sacc.IOMMURegInvalidate, page)
	return nil
}
