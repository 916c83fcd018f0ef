// Package pci models one PCI Express function's configuration space: the type-0
// header, BAR sizing and decoding gated by COMMAND, and a capability list. Like a
// QEMU device, the space is a byte array with a per-byte write mask, so every
// register behaves the same way whatever width or alignment software uses.
package pci

import (
	"encoding/binary"

	"github.com/saccbook/saccbook/sacc"
)

// Function is one function's configuration space.
type Function struct {
	cfg   [sacc.ConfigSpaceSize]byte
	wmask [sacc.ConfigSpaceSize]byte // bits software may change
	bars  [sacc.NumBARs]uint64       // BAR sizes; 0 = not implemented
	// writes counts the writes to the space, so that a copy can tell cheaply
	// whether it is still current (Writes).
	writes uint64
}

// Header is what identifies a function (§2).
type Header struct {
	VendorID, DeviceID uint16
	ClassCode          uint32 // 24 bits: base class, subclass, prog-if
	Revision           uint8
	SubsystemVendorID  uint16
	SubsystemID        uint16
	HeaderType         uint8
	InterruptPin       uint8
	BARSizes           [sacc.NumBARs]uint64 // 32-bit memory BARs; 0 = not implemented
}

// New builds a type-0 function at power-on: COMMAND 0, BARs unassigned.
func New(h Header) *Function {
	f := &Function{bars: h.BARSizes}
	f.Set16(sacc.CfgVendorID, h.VendorID)
	f.Set16(sacc.CfgDeviceID, h.DeviceID)
	f.Set8(sacc.CfgRevision, h.Revision)
	f.Set8(sacc.CfgClassCode, uint8(h.ClassCode))
	f.Set8(sacc.CfgClassCode+1, uint8(h.ClassCode>>8))
	f.Set8(sacc.CfgClassCode+2, uint8(h.ClassCode>>16))
	f.Set8(sacc.CfgHeaderType, h.HeaderType)
	f.Set16(sacc.CfgSubsystemVID, h.SubsystemVendorID)
	f.Set16(sacc.CfgSubsystemID, h.SubsystemID)
	f.Set8(sacc.CfgInterruptPin, h.InterruptPin)
	f.SetWritable(sacc.CfgCommand, 2, sacc.CmdWritableBits)
	f.SetWritable(sacc.CfgCacheLineSize, 1, 0xFF)
	f.SetWritable(sacc.CfgLatencyTimer, 1, 0xFF)
	f.SetWritable(sacc.CfgInterruptLine, 1, 0xFF)
	for i, size := range h.BARSizes {
		if size != 0 {
			// Address bits at and above the size are writable; the low bits read
			// back as the type (32-bit, non-prefetchable memory: all zero), which is
			// how software sizes a BAR (§3).
			f.SetWritable(uint32(sacc.CfgBAR0+4*i), 4, uint64(^uint32(size-1)))
		}
	}
	return f
}

// Set8, Set16 and Set32 write the configuration bytes directly, bypassing the write
// mask: they build the space and model hardware-owned bits.
func (f *Function) Set8(reg uint32, v uint8) {
	f.cfg[reg] = v
	f.writes++
}
func (f *Function) Set16(reg uint32, v uint16) {
	binary.LittleEndian.PutUint16(f.cfg[reg:], v)
	f.writes++
}
func (f *Function) Set32(reg uint32, v uint32) {
	binary.LittleEndian.PutUint32(f.cfg[reg:], v)
	f.writes++
}

// Writes counts the writes made to the space so far (by Set8, Set16, Set32, Write
// and SetWritable): a copy of the function with the same count has the same
// contents.
func (f *Function) Writes() uint64 { return f.writes }

// Get8, Get16 and Get32 read configuration bytes directly.
func (f *Function) Get8(reg uint32) uint8   { return f.cfg[reg] }
func (f *Function) Get16(reg uint32) uint16 { return binary.LittleEndian.Uint16(f.cfg[reg:]) }
func (f *Function) Get32(reg uint32) uint32 { return binary.LittleEndian.Uint32(f.cfg[reg:]) }

// SetWritable makes the given bits of an n-byte register writable by software.
func (f *Function) SetWritable(reg uint32, n int, bits uint64) {
	f.writes++
	for i := range n {
		f.wmask[reg+uint32(i)] = byte(bits >> (8 * i))
	}
}

// Read returns size bytes (1–4) at reg, little-endian. Bytes past the end of the
// space read as 0xFF.
func (f *Function) Read(reg uint32, size int) uint32 {
	var v uint32
	for i := range size {
		b := byte(0xFF)
		if r := reg + uint32(i); r < sacc.ConfigSpaceSize {
			b = f.cfg[r]
		}
		v |= uint32(b) << (8 * i)
	}
	return v
}

// Write stores size bytes (1–4) at reg through the write mask: read-only bits keep
// their value, whatever software writes.
func (f *Function) Write(reg uint32, size int, v uint32) {
	f.writes++
	for i := range size {
		r := reg + uint32(i)
		if r >= sacc.ConfigSpaceSize {
			return
		}
		m := f.wmask[r]
		f.cfg[r] = f.cfg[r]&^m | byte(v>>(8*i))&m
	}
}

// Command is the COMMAND register.
func (f *Function) Command() uint16 { return f.Get16(sacc.CfgCommand) }

// MemoryEnabled reports COMMAND memory-space enable.
func (f *Function) MemoryEnabled() bool { return f.Command()&sacc.CmdMemorySpace != 0 }

// BusMaster reports COMMAND bus-master enable.
func (f *Function) BusMaster() bool { return f.Command()&sacc.CmdBusMaster != 0 }

// BARSize is the size of BAR i, 0 if it is not implemented.
func (f *Function) BARSize(i int) uint64 { return f.bars[i] }

// BARAddress is the base address programmed in BAR i, type bits masked.
func (f *Function) BARAddress(i int) uint64 {
	return uint64(f.Get32(uint32(sacc.CfgBAR0+4*i)) &^ sacc.BARTypeMask)
}

// Decodes reports whether BAR i claims addr: memory space enabled, the BAR
// implemented and assigned inside the MMIO window, and addr inside it. It returns
// the offset into the BAR.
func (f *Function) Decodes(i int, addr uint64) (off uint64, ok bool) {
	base, size := f.BARAddress(i), f.bars[i]
	if size == 0 || !f.MemoryEnabled() || !InMMIOWindow(base, size) {
		return 0, false
	}
	if addr < base || addr-base >= size {
		return 0, false
	}
	return addr - base, true
}

// InMMIOWindow reports whether [base, base+size) lies in the PCI MMIO window, the
// only place BARs are decoded (§1).
func InMMIOWindow(base, size uint64) bool {
	return base >= sacc.MMIOWindowBase && base+size-1 <= sacc.MMIOWindowEnd
}

// AddCapability links a capability of id at off into the list: the list is kept in
// the order capabilities are added, starting from the pointer at 0x34.
func (f *Function) AddCapability(off uint32, id uint8) {
	f.Set8(off, id)
	f.Set8(off+sacc.CapNextOffset, 0)
	f.Set16(sacc.CfgStatus, f.Get16(sacc.CfgStatus)|sacc.StatusCapList)
	if f.cfg[sacc.CfgCapPtr] == 0 {
		f.Set8(sacc.CfgCapPtr, uint8(off))
		return
	}
	p := uint32(f.cfg[sacc.CfgCapPtr])
	for f.cfg[p+sacc.CapNextOffset] != 0 {
		p = uint32(f.cfg[p+sacc.CapNextOffset])
	}
	f.Set8(p+sacc.CapNextOffset, uint8(off))
}

// FindCapability walks the list from 0x34, as software must (§3), and returns the
// offset of the first capability with id, or 0.
func (f *Function) FindCapability(id uint8) uint32 {
	if f.Get16(sacc.CfgStatus)&sacc.StatusCapList == 0 {
		return 0
	}
	seen := 0
	for p := uint32(f.cfg[sacc.CfgCapPtr]) &^ 3; p != 0 && seen < 48; seen++ {
		if f.cfg[p] == id {
			return p
		}
		p = uint32(f.cfg[p+sacc.CapNextOffset]) &^ 3
	}
	return 0
}

// Capabilities lists (offset, id) pairs in list order.
func (f *Function) Capabilities() [][2]uint32 {
	var out [][2]uint32
	if f.Get16(sacc.CfgStatus)&sacc.StatusCapList == 0 {
		return nil
	}
	seen := 0
	for p := uint32(f.cfg[sacc.CfgCapPtr]) &^ 3; p != 0 && seen < 48; seen++ {
		out = append(out, [2]uint32{p, uint32(f.cfg[p])})
		p = uint32(f.cfg[p+sacc.CapNextOffset]) &^ 3
	}
	return out
}
