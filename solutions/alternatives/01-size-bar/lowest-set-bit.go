// Exercise 01-size-bar: size a BAR the way firmware and Linux do.
//
// A BAR (base address register) says where in physical memory a device's
// registers appear. Software chooses the address; the device decides the size.
// Write SizeBAR, which asks a BAR its size the way Linux does in
// __pci_read_base.
//
// What you need to know (docs/SPEC.md §3 "BAR sizing", §4):
//
//   - BAR n is the configuration dword at sacc.CfgBAR0 + 4*n; a type-0 header
//     has BARs 0 to 5 (sacc.NumBARs);
//   - after software writes all ones to a BAR, the BAR reads back a mask: the
//     device ties the address bits below its size to zero, so BAR0 (8 KiB)
//     reads 0xFFFFE000;
//   - the low 4 bits of a memory BAR are type bits, not address bits (bit 0
//     memory or I/O, bits 2:1 32- or 64-bit, bit 3 prefetchable,
//     sacc.BARTypeMask): they play no part in the size, and a BAR that says
//     "prefetchable" has bit 3 set in every read;
//   - a BAR that reads back 0 after the all-ones write is not implemented;
//   - sizing destroys the address the BAR held: until it is written back, the
//     device answers at no address.
//
// The contract the tests hold SizeBAR to:
//
//   - it returns the size in bytes of BAR number bar, or 0 (and no error) for
//     a BAR that is not implemented;
//   - when it returns, the BAR holds exactly what it held before;
//   - a bar outside 0 to 5 is an error, and then it writes nothing.
//
// Edit this file, then run:
//
//	go test ./exercises/01-size-bar/
//	saccbook check 01-size-bar
package sizebar

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
)

// ConfigSpace is the part of a PCI function a BAR sizer needs: 32-bit reads and
// writes of its configuration space (pci_read_config_dword and
// pci_write_config_dword). *kernel.PCIDev has both methods.
type ConfigSpace interface {
	ReadConfig32(reg uint32) uint32
	WriteConfig32(reg uint32, v uint32)
}

// SizeBAR returns the size in bytes of memory BAR number bar, or 0 if the BAR is
// not implemented, and leaves the BAR as it found it.
func SizeBAR(cfg ConfigSpace, bar int) (uint64, error) {
	if bar < 0 || bar >= sacc.NumBARs {
		return 0, fmt.Errorf("BAR%d: a type-0 header has BARs 0 to %d", bar, sacc.NumBARs-1)
	}
	reg := uint32(sacc.CfgBAR0 + 4*bar)
	saved := cfg.ReadConfig32(reg)
	cfg.WriteConfig32(reg, 0xFFFF_FFFF)
	mask := cfg.ReadConfig32(reg)
	cfg.WriteConfig32(reg, saved) // the BAR held its assigned address: give it back
	mask &^= sacc.BARTypeMask     // bits 3:0 describe the BAR; they are not size
	return uint64(mask & -mask), nil
}
