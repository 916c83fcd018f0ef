// Exercise 09-map-iova: write iommu_map for one page.
//
// This is the reference solution; the exercise's file explains the task.
package mapiova

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// Memory is what page-table code needs from the CPU: 64-bit loads and stores
// of physical memory, and a write barrier. *cpu.CPU has all three.
type Memory interface {
	Load64(addr uint64) uint64
	Store64(addr uint64, v uint64)
	WMB()
}

// MapPage makes the 4 KiB IOVA page iova translate to the physical page phys,
// with the rights dir allows, in the tables whose top table is at root. A
// missing table is taken from newTable, which returns a zeroed page.
//
// iova and phys must be 4 KiB aligned and iova below 2^48; otherwise MapPage
// returns an error and writes nothing.
func MapPage(mem Memory, newTable func() (uint64, error), root, iova, phys uint64, dir kernel.Direction) error {
	if iova&sacc.PageMask != 0 || phys&sacc.PageMask != 0 {
		return fmt.Errorf("map %#x -> %#x: not page aligned", iova, phys)
	}
	if iova >= sacc.IOVALimit {
		return fmt.Errorf("map %#x: beyond %d bits", iova, sacc.IOVAWidth)
	}
	var perm uint64
	switch dir {
	case kernel.DMAToDevice:
		perm = sacc.PTERead
	case kernel.DMAFromDevice:
		perm = sacc.PTEWrite
	case kernel.DMABidirectional:
		perm = sacc.PTERead | sacc.PTEWrite
	default:
		return fmt.Errorf("map %#x: unknown direction %d", iova, dir)
	}
	table := root
	for level := 0; level < sacc.IOPTLevels-1; level++ {
		slot := table + sacc.IOVAIndex(iova, level)*sacc.IOPTEntrySize
		e := sacc.PTE(mem.Load64(slot))
		if !e.Present() {
			next, err := newTable()
			if err != nil {
				return err
			}
			e = sacc.MakePTE(next, sacc.PTERead|sacc.PTEWrite)
			mem.Store64(slot, uint64(e))
		}
		table = e.Addr()
	}
	mem.Store64(table+sacc.IOVAIndex(iova, sacc.IOPTLevels-1)*sacc.IOPTEntrySize, uint64(sacc.MakePTE(phys, perm)))
	mem.WMB()
	return nil
}
