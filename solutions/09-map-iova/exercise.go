// Exercise 09-map-iova: write iommu_map for one page.
//
// With the IOMMU on, every address the device uses is an IOVA, and the IOMMU
// looks it up in four levels of I/O page tables in RAM. Write MapPage, which
// adds one page to those tables: what Linux's iommu_map() does, and saccbook's
// kernel in mapPage (sacc/kernel/dma.go).
//
// What you need to know (docs/SPEC.md §10 "I/O page tables"):
//
//   - every table is one 4 KiB page of 512 entries of 8 bytes;
//   - IOVA bits 47:39 index the top table (the one at root), 38:30 the next,
//     29:21 the next, 20:12 the leaf table; bits 11:0 are the offset in the
//     page, and an IOVA has 48 bits (sacc.IOVALimit). sacc.IOVAIndex(iova,
//     level) gives the index at level 0 to 3;
//   - an entry holds the physical address of the next table (or, in a leaf, of
//     the page) in bits 51:12, bit 0 "read allowed" and bit 1 "write allowed";
//     sacc.MakePTE builds one, sacc.PTE(v).Present() and .Addr() read one. An
//     entry with neither right is absent;
//   - the rights of a page are the AND of all four levels;
//   - the device only reads a buffer mapped DMA_TO_DEVICE, only writes one
//     mapped DMA_FROM_DEVICE, and may do both with DMA_BIDIRECTIONAL;
//   - tables that already exist are shared with other mappings;
//   - the IOMMU reads the tables from RAM, and the CPU's stores may still sit
//     in its store buffer (on arm64, for a while): mem.WMB() makes every
//     earlier store visible.
//
// The contract the tests hold MapPage to (on x86 and arm64):
//
//   - right after it returns, the IOMMU's walk of iova in RAM ends at phys, with
//     exactly the rights dir allows, and the device can use the page;
//   - every mapping that existed before still works, and an existing table is
//     used, never replaced: newTable is asked only for tables that are missing;
//   - iova and phys must be 4 KiB aligned and iova below 2^48; otherwise MapPage
//     returns an error and writes nothing;
//   - if newTable fails, MapPage returns its error.
//
// Edit this file, then run:
//
//	go test ./exercises/09-map-iova/
//	saccbook check 09-map-iova
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
