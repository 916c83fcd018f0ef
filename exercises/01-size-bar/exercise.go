// Exercise 01-size-bar: size a BAR the way firmware and Linux do.
//
// A BAR (base address register) says where in physical memory a device's
// registers appear. Software chooses the address; the device decides the size.
// To learn the size, software writes all ones to the BAR and reads it back. The
// device keeps the bits below its size at zero, so what comes back is a mask,
// for example 0xFFFFE000. Its low 4 bits are not part of the mask: they are type
// bits (bit 0 memory or I/O, bits 2:1 32- or 64-bit, bit 3 prefetchable) and must
// be cleared before the mask is turned into a size. Sizing destroys the address
// the BAR held, so the BAR must get its old value back at the end
// (specification §3 "BAR sizing", §4; Linux does this in __pci_read_base).
//
// Edit this file, then run:
//
//	go test ./exercises/01-size-bar/
//	saccbook check 01-size-bar
package sizebar

import (
	"errors"
)

// ConfigSpace is the part of a PCI function a BAR sizer needs: 32-bit reads and
// writes of its configuration space (pci_read_config_dword and
// pci_write_config_dword). *kernel.PCIDev has both methods.
type ConfigSpace interface {
	ReadConfig32(reg uint32) uint32
	WriteConfig32(reg uint32, v uint32)
}

// SizeBAR returns the size in bytes of memory BAR number bar (0 to 5; BAR n is
// the dword at sacc.CfgBAR0 + 4*n), or 0 if the BAR is not implemented (it reads
// back 0 after the all-ones write). When SizeBAR returns, the BAR holds exactly
// what it held before.
//
// A bar outside 0 to 5 is an error, and then nothing is written.
func SizeBAR(cfg ConfigSpace, bar int) (uint64, error) {
	// TODO: save the BAR, write all ones, read the mask back, restore the BAR,
	// clear the type bits and turn the mask into a size.
	return 0, errors.New("SizeBAR is not written yet: this is your exercise")
}
