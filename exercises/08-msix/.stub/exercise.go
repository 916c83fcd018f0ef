// Exercise 08-msix: program an MSI-X vector and read the pending bits.
//
// An MSI-X interrupt is a 32-bit memory write of a message data value to a
// message address; a write into 0xFEE00000–0xFEEFFFFF becomes an interrupt. The
// driver chooses both and writes them into the MSI-X table, in BAR1 at offset 0
// (specification §4, §9). Entry v is 16 bytes at 16*v:
//
//	+0   message address, low 32 bits
//	+4   message address, high 32 bits
//	+8   message data
//	+12  vector control: bit 0 = masked
//
// Every vector is masked at power-on. A masked vector does not lose its
// interrupt: the device sets the vector's bit in the pending bit array (PBA, BAR1
// offset 0x800, bit v) and sends the message when the vector is unmasked. So
// unmask last: a message that is already pending goes out the moment you do, to
// whatever address the entry holds then.
//
// Edit this file, then run:
//
//	go test ./exercises/08-msix/
//	saccbook check 08-msix
package msix

import (
	"errors"
)

// MMIO is a mapped BAR: 32-bit reads and writes at offsets into it
// (*kernel.IOMem has both methods).
type MMIO interface {
	Readl(off uint32) uint32
	Writel(off uint32, v uint32)
}

// SetupVector programs entry v of the MSI-X table mapped at table to send data
// to addr, and then unmasks it. Only entry v changes. A v outside the table
// (SACC has sacc.MSIXVectors entries) is an error, and then nothing is written.
func SetupVector(table MMIO, v int, addr uint64, data uint32) error {
	// TODO: address low and high, data, and last of all the vector control word.
	return errors.New("SetupVector is not written yet: this is your exercise")
}

// Pending reports whether vector v's bit is set in the PBA.
func Pending(table MMIO, v int) bool {
	// TODO: read the PBA and test bit v.
	return false
}
