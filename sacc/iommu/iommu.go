// Package iommu is the platform IOMMU of the specification's §10: the register block at
// sacc.IOMMUBase, the 4-level I/O page walk, a 32-entry IOTLB with least-recently-used
// replacement, and the fault log ring with its MSI.
//
// The IOMMU is the only thing between the device's DMA and all of RAM, so the model is
// deliberately literal about the parts that make real bugs: the IOTLB never watches the
// page tables (a changed or removed mapping keeps working until software writes
// INVALIDATE), a full fault log drops records, and turning translation off and on again
// does not flush the IOTLB.
//
// The IOMMU has no clock of its own and charges no virtual time: Translate reports
// whether a page walk happened and the caller charges sim.Cost.IOTLBMiss (§11). Nothing
// here iterates a map, reads the wall clock or draws a random number, so a run is a
// function of its inputs (§11, determinism). The translation path allocates nothing.
package iommu

import (
	"encoding/binary"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Memory is physical RAM as the IOMMU sees it (page-table walks, fault records).
// Read/Write return false when the range is not entirely RAM.
type Memory interface {
	ReadPhys(addr uint64, b []byte) bool
	WritePhys(addr uint64, b []byte) bool
}

// Poster delivers the fault MSI: a 32-bit posted write of data to a physical address
// (the platform turns interrupt-window addresses into interrupts, RAM addresses into stores).
type Poster interface {
	PostWrite32(addr uint64, data uint32)
}

// WalkStep is one level of a page walk as Walk reports it.
type WalkStep struct {
	Level int      // 0 = top (IOVA bits 47:39) … 3 = leaf (bits 20:12)
	Table uint64   // physical address of the table read at this level
	Index uint64   // entry index inside the table
	Entry sacc.PTE // the entry read (0 when NotRAM)
	// NotRAM is true when the entry's address is not RAM; the walk stops there and a
	// translation would fault as not present.
	NotRAM bool
}

// TLBEntry is one cached translation as IOTLB reports it.
type TLBEntry struct {
	IOVAPage, PhysPage uint64
	Perm               uint64 // effective permission: sacc.PTERead | sacc.PTEWrite
}

// State is a snapshot of the registers for inspection (a monitor's `info iommu`);
// taking it traces nothing, unlike ReadReg.
type State struct {
	CTRL         uint32
	STATUS       uint32
	PTRoot       uint64
	FaultBase    uint64
	FaultSize    uint32
	FaultHead    uint32
	FaultTail    uint32
	FaultMSIAddr uint64
	FaultMSIData uint32
}

// tlbEntry is one IOTLB slot. stamp orders slots by last use (larger = more recent);
// stamps are unique, so replacement never depends on anything but the access order.
type tlbEntry struct {
	valid    bool
	iovaPage uint64
	physPage uint64
	perm     uint64
	stamp    uint64
}

// IOMMU is the platform IOMMU. The zero value is not usable; call New.
//
// Only INVALIDATE removes IOTLB entries (and Reset): clearing CTRL.TRANSLATE_ENABLE
// bypasses the IOTLB but keeps its contents, so translations cached before translation
// was turned off are used again when it is turned back on. Software that changes the
// page tables while translation is off must still invalidate (§10: the IOTLB does not
// watch the tables).
//
// An IOMMU is not safe for concurrent use; the machine drives it from one goroutine.
type IOMMU struct {
	mem    Memory
	post   Poster
	tr     *trace.Tracer
	quirks quirk.Set

	// core is every piece of state that is a plain value, kept together so that
	// Save can copy and compare it at once.
	core

	// scratch is the buffer handed to Memory. It lives in the IOMMU (already on the
	// heap) so that passing it through the interface costs no allocation.
	scratch [sacc.FaultRecordSize]byte
}

// core is the IOMMU's state that holds no references.
type core struct {
	// Registers (§10).
	ctrl      uint32
	ptRoot    uint64
	invLo     uint32 // low half of INVALIDATE latched by a 32-bit write, for the high half
	faultBase uint64
	faultSize uint32
	faultHead uint32 // as written; compared modulo FAULT_SIZE
	faultTail uint32
	overflow  bool // STATUS bit 2, sticky until the next FAULT_HEAD write
	msiAddr   uint64
	msiData   uint32

	tlb   [sacc.IOTLBEntries]tlbEntry
	clock uint64 // last LRU stamp handed out
}

// New returns an IOMMU in its power-on state: translation off, every register 0 but
// CAP, the IOTLB empty. mem must not be nil; post may be nil (no fault MSI is ever
// delivered) and tr may be nil (nothing is traced).
func New(mem Memory, post Poster, tr *trace.Tracer, quirks quirk.Set) *IOMMU {
	return &IOMMU{mem: mem, post: post, tr: tr, quirks: quirks}
}

// Reset returns every register and the IOTLB to power-on state.
func (u *IOMMU) Reset() {
	mem, post, tr, quirks := u.mem, u.post, u.tr, u.quirks
	*u = IOMMU{mem: mem, post: post, tr: tr, quirks: quirks}
}

// Enabled reports CTRL.TRANSLATE_ENABLE.
func (u *IOMMU) Enabled() bool { return u.ctrl&sacc.IOMMUCtrlTranslate != 0 }

// State returns the registers without tracing an access.
func (u *IOMMU) State() State {
	return State{
		CTRL:         u.ctrl,
		STATUS:       u.status(),
		PTRoot:       u.ptRoot,
		FaultBase:    u.faultBase,
		FaultSize:    u.faultSize,
		FaultHead:    u.faultHead,
		FaultTail:    u.faultTail,
		FaultMSIAddr: u.msiAddr,
		FaultMSIData: u.msiData,
	}
}

// is64 reports whether off is the base of one of the 64-bit registers (§10 "RW 64" /
// "WO 64"), the only offsets that accept a 64-bit access.
func is64(off uint64) bool {
	switch off {
	case sacc.IOMMURegPTRoot, sacc.IOMMURegInvalidate, sacc.IOMMURegFaultBase, sacc.IOMMURegFaultMSIAddr:
		return true
	}
	return false
}

// accepted reports whether an access of size bytes at off is one the block decodes:
// 32-bit at any 4-byte-aligned offset, 64-bit only at a 64-bit register.
func accepted(off uint64, size int) bool {
	switch size {
	case 4:
		return off%4 == 0 && off < sacc.IOMMUSize
	case 8:
		return is64(off)
	}
	return false
}

// ReadReg reads the register block at sacc.IOMMUBase; off is the offset inside the 4 KiB
// block, size 4 or 8. ok=false means the access width/alignment is not accepted (the caller
// traces a guest error and returns all ones). 32-bit accesses are accepted at every
// 4-byte-aligned offset (the halves of a 64-bit register: low at its base, high at +4);
// 64-bit accesses only at PT_ROOT, INVALIDATE, FAULT_BASE and FAULT_MSI_ADDR. Reserved
// offsets and the write-only INVALIDATE read 0. Accepted reads are traced (IOMMURegRead).
func (u *IOMMU) ReadReg(off uint64, size int) (val uint64, ok bool) {
	if !accepted(off, size) {
		return 0, false
	}
	if size == 8 {
		val = u.reg64(off)
	} else {
		val = uint64(u.reg32(off))
	}
	u.tr.EmitIOMMURegRead(off, uint64(size), val)
	return val, true
}

// reg64 is the value of the 64-bit register at base (INVALIDATE is write-only: 0).
func (u *IOMMU) reg64(base uint64) uint64 {
	switch base {
	case sacc.IOMMURegPTRoot:
		return u.ptRoot
	case sacc.IOMMURegFaultBase:
		return u.faultBase
	case sacc.IOMMURegFaultMSIAddr:
		return u.msiAddr
	}
	return 0
}

// reg32 is the value a 32-bit read at off returns.
func (u *IOMMU) reg32(off uint64) uint32 {
	if base := off &^ 7; is64(base) {
		v := u.reg64(base)
		if off&4 != 0 {
			return uint32(v >> 32)
		}
		return uint32(v)
	}
	switch off {
	case sacc.IOMMURegCAP:
		return sacc.IOMMUCapValue
	case sacc.IOMMURegCTRL:
		return u.ctrl
	case sacc.IOMMURegSTATUS:
		return u.status()
	case sacc.IOMMURegFaultSize:
		return u.faultSize
	case sacc.IOMMURegFaultHead:
		return u.faultHead
	case sacc.IOMMURegFaultTail:
		return u.faultTail
	case sacc.IOMMURegFaultMSIData:
		return u.msiData
	}
	return 0 // reserved
}

// status computes STATUS (§10): translation active, fault log not empty, overflowed.
func (u *IOMMU) status() uint32 {
	var s uint32
	if u.Enabled() {
		s |= sacc.IOMMUStatusActive
	}
	if u.logUsable() && u.faultHead&(u.faultSize-1) != u.faultTail {
		s |= sacc.IOMMUStatusFaultsLog
	}
	if u.overflow {
		s |= sacc.IOMMUStatusOverflowed
	}
	return s
}

// WriteReg writes the register block; the acceptance rules are ReadReg's. ok=false means
// the access is not accepted (the caller traces a guest error and drops the write).
// Writes to read-only registers (CAP, STATUS, FAULT_TAIL) and reserved offsets are
// accepted and ignored. Accepted writes are traced (IOMMURegWrite) before their effect,
// so an invalidation's IOMMUInvalidate follows the write that caused it.
func (u *IOMMU) WriteReg(off uint64, size int, val uint64) (ok bool) {
	if !accepted(off, size) {
		return false
	}
	if size == 4 {
		val = uint64(uint32(val))
	}
	u.tr.EmitIOMMURegWrite(off, uint64(size), val)
	if size == 8 {
		u.setReg64(off, val)
		return true
	}
	if base := off &^ 7; is64(base) {
		if base == sacc.IOMMURegInvalidate {
			u.invalidateHalf(off&4 != 0, uint32(val))
			return true
		}
		old := u.reg64(base)
		if off&4 != 0 {
			val = old&0xFFFF_FFFF | val<<32
		} else {
			val = old&^0xFFFF_FFFF | val
		}
		u.setReg64(base, val)
		return true
	}
	switch off {
	case sacc.IOMMURegCTRL:
		// Only TRANSLATE_ENABLE exists; other bits are reserved and read 0. Neither
		// edge touches the IOTLB (see IOMMU).
		u.ctrl = uint32(val) & sacc.IOMMUCtrlTranslate
	case sacc.IOMMURegFaultSize:
		u.faultSize = uint32(val)
		u.faultTail = 0 // a new ring starts empty at its first record
	case sacc.IOMMURegFaultHead:
		u.faultHead = uint32(val)
		u.overflow = false // §10: overflow is cleared by the next write to FAULT_HEAD
	case sacc.IOMMURegFaultMSIData:
		u.msiData = uint32(val)
	}
	return true
}

// setReg64 stores a whole 64-bit register (a 64-bit write, or a 32-bit half merged
// with the other half).
func (u *IOMMU) setReg64(base, val uint64) {
	switch base {
	case sacc.IOMMURegPTRoot:
		u.ptRoot = val
	case sacc.IOMMURegInvalidate:
		u.invLo = uint32(val)
		u.invalidate(val)
	case sacc.IOMMURegFaultBase:
		u.faultBase = val
		u.faultTail = 0 // a new ring starts empty at its first record
	case sacc.IOMMURegFaultMSIAddr:
		u.msiAddr = val
	}
}

// invalidateHalf handles a 32-bit write to INVALIDATE. A write cannot wait for its other
// half, so each half acts at once: the low half invalidates the page of its own
// (zero-extended) value and is latched; the high half invalidates the page of itself
// combined with the latched low half. A driver writing low then high therefore
// invalidates the page it meant (and one more, harmlessly): over-invalidation can
// happen, under-invalidation never. Writing 0xFFFF_FFFF to both halves, low first,
// ends in all ones, which flushes everything.
func (u *IOMMU) invalidateHalf(high bool, v uint32) {
	if high {
		u.invalidate(uint64(v)<<32 | uint64(u.invLo))
		return
	}
	u.invLo = v
	u.invalidate(uint64(v))
}

// invalidate drops the IOTLB entry for the page of v, or every entry if v is all ones
// (§10 INVALIDATE). With quirk.IOTLBIgnoresInvalidate the invalidation is acknowledged
// in the trace but nothing is dropped (bug hunt 15).
func (u *IOMMU) invalidate(v uint64) {
	page := v
	if v != sacc.InvalidateAll {
		page = v &^ uint64(sacc.PageMask)
	}
	dropped := 0
	if !u.quirks.Has(quirk.IOTLBIgnoresInvalidate) {
		for i := range u.tlb {
			e := &u.tlb[i]
			if e.valid && (v == sacc.InvalidateAll || e.iovaPage == page) {
				e.valid = false
				dropped++
			}
		}
	}
	u.tr.EmitIOMMUInvalidate(page, uint64(dropped))
}

// logUsable reports whether the fault log can hold records at all: FAULT_SIZE must be a
// power of two (§10). A size of 1 is one but is always full (one slot stays empty).
func (u *IOMMU) logUsable() bool {
	return u.faultSize != 0 && u.faultSize&(u.faultSize-1) == 0
}

// fault blocks a DMA (§10): it traces the fault, then logs the record at FAULT_BASE +
// FAULT_TAIL × 16 and posts the fault MSI, or, if the log is full or unusable, sets the
// overflow bit and drops the record without an MSI. The record is written to physical
// memory untranslated; if that address is not RAM the posted write is lost like any
// other, and the IOMMU, which gets no completion for it, advances FAULT_TAIL and posts
// the MSI all the same.
func (u *IOMMU) fault(iova uint64, reason sacc.FaultReason, access uint8, source uint16) {
	u.tr.EmitIOMMUFault(iova, uint64(reason), uint64(access), uint64(source))
	mask := u.faultSize - 1
	if !u.logUsable() || (u.faultTail+1)&mask == u.faultHead&mask {
		u.overflow = true
		u.tr.EmitIOMMUFaultDropped(iova, uint64(reason))
		return
	}
	rec := sacc.FaultRecord{IOVA: iova, SourceID: source, Reason: reason, Access: access}
	rec.Encode(u.scratch[:])
	u.mem.WritePhys(u.faultBase+uint64(u.faultTail)*sacc.FaultRecordSize, u.scratch[:])
	u.faultTail = (u.faultTail + 1) & mask
	if u.msiAddr != 0 && u.post != nil {
		u.post.PostWrite32(u.msiAddr, u.msiData)
	}
}

// readPTE reads the entry at addr into a PTE; ok is false if addr is not RAM.
func (u *IOMMU) readPTE(addr uint64) (sacc.PTE, bool) {
	b := u.scratch[:sacc.IOPTEntrySize]
	if !u.mem.ReadPhys(addr, b) {
		return 0, false
	}
	return sacc.PTE(binary.LittleEndian.Uint64(b)), true
}
