// Exercise 08-msix: program an MSI-X vector and read the pending bits.
//
// An MSI-X interrupt is a 32-bit memory write of a message data value to a
// message address; a write into 0xFEE00000–0xFEEFFFFF becomes an interrupt. The
// driver chooses both and writes them into the device's MSI-X table, as
// pci_alloc_irq_vectors and the MSI-X core do in Linux. Write SetupVector and
// Pending.
//
// What you need to know (docs/SPEC.md §1, §4, §9):
//
//   - the table is in BAR1 at offset 0 (sacc.MSIXTableOffset). SACC has
//     sacc.MSIXVectors entries: vector 0 for completions, vector 1 for device
//     errors. Entry v is 16 bytes at 16*v: +0 message address, low 32 bits;
//     +4 message address, high 32 bits; +8 message data; +12 vector control,
//     whose bit 0 masks the vector;
//   - every vector is masked at power-on. A masked vector does not lose its
//     interrupt: the device sets the vector's bit v in the pending bit array
//     (PBA, BAR1 offset 0x800, sacc.MSIXPBAOffset) and sends the message the
//     moment the vector is unmasked, to whatever address and data the entry
//     holds then;
//   - BAR1 is reached with 32-bit reads and writes.
//
// The contract the tests hold your functions to:
//
//   - after SetupVector(table, v, addr, data), entry v holds addr (all 64 bits)
//     and data and is unmasked, and nothing else in the table has changed;
//   - a message that was already pending leaves with the new address and data,
//     never the old ones;
//   - a v outside the table is an error, and then nothing is written;
//   - Pending(table, v) reports bit v of the PBA, for each vector, and false
//     for a v outside the table.
//
// Edit this file, then run:
//
//	go test ./exercises/08-msix/
//	saccbook check 08-msix
package msix

import "github.com/saccbook/saccbook/sacc"

// MMIO is a mapped BAR: 32-bit reads and writes at offsets into it
// (*kernel.IOMem has both methods).
type MMIO interface {
	Readl(off uint32) uint32
	Writel(off uint32, v uint32)
}

// SetupVector programs entry v of the MSI-X table mapped at table to send data
// to addr, and unmasks it.
func SetupVector(table MMIO, v int, addr uint64, data uint32) error {
	e := uint32(sacc.MSIXTableOffset + v*sacc.MSIXEntrySize)
	table.Writel(e+sacc.MSIXEntryAddrLo, uint32(addr))
	table.Writel(e+sacc.MSIXEntryAddrHi, uint32(addr>>32))
	table.Writel(e+sacc.MSIXEntryData, data)
	table.Writel(e+sacc.MSIXEntryControl, 0) // unmask last: a pending message leaves now
	return nil
}

// Pending reports whether vector v's bit is set in the PBA.
func Pending(table MMIO, v int) bool {
	if v < 0 || v >= sacc.MSIXVectors {
		return false
	}
	return table.Readl(sacc.MSIXPBAOffset)&(1<<v) != 0
}
