// Exercise 01-find-device: find the accelerator on bus 0.
//
// Before a driver can run, software has to find its device: nobody tells it
// which slot the SACC sits in. Write FindSACC, the scan Linux's PCI core does at
// boot (pci_scan_slot) and lspci prints.
//
// What you need to know (docs/SPEC.md §1 "ECAM addressing", §2, §3):
//
//   - every function has 4 KiB of configuration space, reached through ECAM: the
//     register reg of bus b, device d, function f is the 32-bit word at physical
//     address sacc.ECAMAddress(b, d, f, reg), which is
//     ECAMBase + b<<20 + d<<15 + f<<12 + reg;
//   - the dword at offset 0x00 (sacc.CfgVendorID) holds the vendor ID in its low
//     16 bits and the device ID in its high 16 bits. An empty slot answers all
//     ones, so its vendor ID reads 0xFFFF (sacc.AbsentVendorID);
//   - the dword at offset 0x08 (sacc.CfgRevision) holds the revision ID in its
//     low 8 bits and the class code in its high 24 bits;
//   - the SACC's IDs are sacc.VendorID and sacc.DeviceID. Other devices share
//     its vendor ID (QEMU's devices are all 0x1B36).
//
// The contract the tests hold FindSACC to:
//
//   - it looks at function 0 of devices 0 to 31 of bus 0, and returns the first
//     one whose vendor ID and device ID are both the SACC's, with Bus, Dev, Fn,
//     Vendor, Device, Class and Revision filled in from configuration space;
//   - the tests hand it machines whose slots are filled differently (the SACC
//     elsewhere, other devices in front of it, nothing at all), so the answer
//     must come from what the bus says;
//   - it only reads: a scan never writes configuration space;
//   - if no slot holds a SACC, it returns an error that wraps ErrNotFound (the
//     caller tests it with errors.Is).
//
// Edit this file, then run:
//
//	go test ./exercises/01-find-device/
//	saccbook check 01-find-device
package finddevice

import (
	"errors"
	"fmt"

	"github.com/saccbook/saccbook/sacc"
)

// ConfigReader is how a scan reaches configuration space: a 32-bit uncached load
// from a physical address. *cpu.CPU has this method.
type ConfigReader interface {
	Readl(addr uint64) uint32
}

// Function is one PCI function as a scan finds it.
type Function struct {
	Bus, Dev, Fn   uint32
	Vendor, Device uint16
	Class          uint32 // 24 bits: base class, subclass, programming interface
	Revision       uint8
}

// ErrNotFound is returned, as it is or wrapped, when no slot holds a SACC.
var ErrNotFound = errors.New("no SACC device on bus 0")

// FindSACC scans bus 0 through cfg and returns the first SACC it finds, or an
// error wrapping ErrNotFound.
func FindSACC(cfg ConfigReader) (Function, error) {
	const bus, fn = 0, 0
	for dev := uint32(0); dev < 32; dev++ {
		id := cfg.Readl(sacc.ECAMAddress(bus, dev, fn, sacc.CfgVendorID))
		vendor, device := uint16(id), uint16(id>>16)
		if vendor == sacc.AbsentVendorID {
			continue // an empty slot reads all ones
		}
		if vendor != sacc.VendorID {
			continue // somebody else's device
		}
		rc := cfg.Readl(sacc.ECAMAddress(bus, dev, fn, sacc.CfgRevision))
		return Function{
			Bus: bus, Dev: dev, Fn: fn,
			Vendor: vendor, Device: device,
			Class: rc >> 8, Revision: uint8(rc),
		}, nil
	}
	return Function{}, fmt.Errorf("scanned 32 slots: %w", ErrNotFound)
}
