// Exercise 02-read-identity: read the device's first two registers.
//
// A driver's first MMIO access checks that it is talking to the device it
// thinks it is. BAR0 page 0 holds SACC's register file (specification §5): MAGIC
// at offset 0x00 always reads 0x4A4E524F and VERSION at 0x04 reads 0x00000001.
// Linux drivers map the BAR with pci_iomap and read registers with ioread32 (or
// readl); here that is pdev.IOMap(0), which gives a *kernel.IOMem, and its
// Readl(offset) method.
//
// Every register is 32 bits wide, and §5 refuses narrower accesses: a 16-bit read
// returns all ones. So does every read of a BAR that is not decoding: memory
// decoding (COMMAND bit 1) is off until pci_enable_device turns it on, and a
// BAR left at an address outside the MMIO window answers nothing (§3). All ones
// is therefore the sign that the device is not there, not a register value.
//
// Edit this file, then run:
//
//	go test ./exercises/02-read-identity/
//	saccbook check 02-read-identity
package readidentity

import (
	"errors"

	"github.com/saccbook/saccbook/sacc/kernel"
)

// Identity is what the first two registers of BAR0 say.
type Identity struct {
	Magic   uint32 // MAGIC, offset 0x00
	Version uint32 // VERSION, offset 0x04
}

// ErrNotDecoding is returned, wrapped or as it is, when MAGIC reads all ones.
var ErrNotDecoding = errors.New("BAR0 reads all ones: memory decoding is off or BAR0 is not where the kernel thinks")

// ReadIdentity maps BAR0 of pdev, reads MAGIC and VERSION with 32-bit reads and
// checks them against the datasheet (sacc.MagicValue, sacc.VersionValue), as
// the first step of §7.5 asks. It returns what it read.
//
// It does not enable the device: that is the caller's job (pci_enable_device).
// If MAGIC reads all ones, it returns an error wrapping ErrNotDecoding. Any other
// wrong MAGIC or VERSION is an error too. It only reads: it writes nothing to the
// device.
func ReadIdentity(pdev *kernel.PCIDev) (Identity, error) {
	// TODO: map BAR0, read MAGIC and VERSION, check them.
	return Identity{}, errors.New("ReadIdentity is not written yet: this is your exercise")
}
