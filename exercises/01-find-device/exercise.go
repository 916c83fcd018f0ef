// Exercise 01-find-device: find the accelerator on bus 0.
//
// Before a driver can run, software has to find its device. Every PCI Express
// function has 4 KiB of configuration space. On this machine it is reached through
// ECAM, a window of physical memory at sacc.ECAMBase: the configuration space of
// bus b, device d, function f starts at
//
//	ECAMBase + b<<20 + d<<15 + f<<12
//
// (specification §1; sacc.ECAMAddress computes it for you). The dword at offset
// 0x00 holds the vendor ID in its low 16 bits and the device ID in its high 16
// bits. An empty slot answers all ones, so its vendor ID reads 0xFFFF
// (sacc.AbsentVendorID). The dword at 0x08 holds the revision ID in its low 8 bits
// and the class code in its high 24 bits (§2, §3). This is what `lspci` prints,
// and what Linux's PCI core reads at boot (pci_scan_slot).
//
// Edit this file, then run:
//
//	go test ./exercises/01-find-device/
//	saccbook check 01-find-device
package finddevice

import (
	"errors"
)

// ConfigReader is how a scan reaches configuration space: a 32-bit uncached load
// from a physical address. *cpu.CPU has this method. The tests also hand you
// machines whose slots are filled differently, so look, don't assume.
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

// FindSACC scans bus 0, devices 0 to 31, function 0, through ECAM, and returns
// the first function whose vendor ID is sacc.VendorID and whose device ID is
// sacc.DeviceID, with its class code and revision filled in.
//
// A scan only reads: it must not write configuration space. If no slot holds a
// SACC, FindSACC returns an error wrapping ErrNotFound.
func FindSACC(cfg ConfigReader) (Function, error) {
	// TODO: read the vendor and device IDs of each slot and pick out the SACC.
	return Function{}, errors.New("FindSACC is not written yet: this is your exercise")
}
