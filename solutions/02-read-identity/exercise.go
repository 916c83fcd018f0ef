// Exercise 02-read-identity: read the device's first two registers.
//
// A driver's first MMIO access checks that it is talking to the device it
// thinks it is. Write ReadIdentity, the check of step 1 of §7.5, as a Linux
// driver does it with pci_iomap and readl in its probe.
//
// What you need to know (docs/SPEC.md §3, §5, §7.5):
//
//   - BAR0 page 0 holds the register file: MAGIC at offset 0x00 always reads
//     sacc.MagicValue (0x4A4E524F) and VERSION at 0x04 reads sacc.VersionValue;
//   - pdev.IOMap(0) is pci_iomap: it gives a *kernel.IOMem for BAR0, whose
//     Readl(offset) is readl;
//   - every register is 32 bits wide, and the device refuses narrower accesses:
//     a 16-bit read returns all ones (§5);
//   - a BAR that does not decode answers all ones too: memory decoding (COMMAND
//     bit 1) is off until pci_enable_device turns it on, and a BAR left at an
//     address outside the MMIO window answers nothing (§3). All ones is the sign
//     that nothing answered, not a register value.
//
// The contract the tests hold ReadIdentity to:
//
//   - it returns what it read from MAGIC and VERSION, and nil when both are the
//     datasheet's values;
//   - if MAGIC reads all ones, it returns an error wrapping ErrNotDecoding, and
//     only then: a MAGIC that is not all ones comes from a device that
//     decodes, just not a SACC;
//   - any other wrong MAGIC, and a wrong VERSION, is an error too;
//   - it only reads, with 32-bit reads: it writes nothing to the device and
//     leaves enabling the device to its caller.
//
// Edit this file, then run:
//
//	go test ./exercises/02-read-identity/
//	saccbook check 02-read-identity
package readidentity

import (
	"errors"
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// Identity is what the first two registers of BAR0 say.
type Identity struct {
	Magic   uint32 // MAGIC, offset 0x00
	Version uint32 // VERSION, offset 0x04
}

// ErrNotDecoding is returned, wrapped or as it is, when MAGIC reads all ones.
var ErrNotDecoding = errors.New("BAR0 reads all ones: memory decoding is off or BAR0 is not where the kernel thinks")

// ReadIdentity maps BAR0 of pdev, reads MAGIC and VERSION and checks them
// against the datasheet. It returns what it read.
func ReadIdentity(pdev *kernel.PCIDev) (Identity, error) {
	regs, err := pdev.IOMap(0)
	if err != nil {
		return Identity{}, fmt.Errorf("map BAR0: %w", err)
	}
	var id Identity
	id.Magic = regs.Readl(sacc.RegMAGIC)
	if id.Magic == 0xFFFF_FFFF {
		return id, fmt.Errorf("MAGIC at %#x: %w", regs.Base, ErrNotDecoding)
	}
	if id.Magic != sacc.MagicValue {
		return id, fmt.Errorf("MAGIC reads %#x, want %#x: not a SACC", id.Magic, sacc.MagicValue)
	}
	id.Version = regs.Readl(sacc.RegVERSION)
	if id.Version != sacc.VersionValue {
		return id, fmt.Errorf("VERSION reads %#x, want %#x", id.Version, sacc.VersionValue)
	}
	return id, nil
}
