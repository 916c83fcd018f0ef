package iommu

import (
	"encoding/binary"
	"sort"

	"github.com/saccbook/saccbook/sacc"
)

// Translate translates the 4 KiB IOVA page containing iova for one access (access is
// sacc.AccessRead or sacc.AccessWrite; anything but AccessWrite is a read) by the device
// with requester ID source. On success phys is the physical address of iova itself
// (page base | offset).
//
// With translation disabled it is passthrough (phys = iova, no IOTLB, no trace). A write
// into the interrupt window is passthrough too, with translation on: §10 translates every
// DMA "except writes into the interrupt window", so an MSI-X message always reaches the
// interrupt controller.
//
// Otherwise, in this order (§10): an IOVA at or beyond 2^48 faults with
// sacc.FaultAddressWidth before the IOTLB is consulted; an IOTLB hit (IOTLBHit) checks
// the access against the cached effective permission and faults without re-walking if
// it is denied; a miss (IOTLBMiss) walks the four levels, and missed is true so that the
// caller charges sim.Cost.IOTLBMiss. Only a successful walk fills the IOTLB, evicting
// the least recently used entry when all 32 are taken (IOTLBEvict). Every success is
// traced as IOMMUTranslate(iova page, phys page, perm).
//
// On a fault the record is logged (or dropped on overflow) and the fault MSI is posted;
// fault is the reason (0 on success) and phys is 0. The caller must not touch memory
// for a faulting access (§10: "a faulting DMA never touches memory").
//
// Translate allocates nothing.
func (u *IOMMU) Translate(iova uint64, access uint8, source uint16) (phys uint64, missed bool, fault sacc.FaultReason) {
	if !u.Enabled() || access == sacc.AccessWrite && sacc.InIntWindow(iova) {
		return iova, false, 0
	}
	if iova >= sacc.IOVALimit {
		u.fault(iova, sacc.FaultAddressWidth, access, source)
		return 0, false, sacc.FaultAddressWidth
	}
	page := iova &^ uint64(sacc.PageMask)
	off := iova & sacc.PageMask

	if e := u.lookup(page); e != nil {
		u.tr.EmitIOTLBHit(page)
		if r := denied(e.perm, access); r != 0 {
			u.fault(iova, r, access, source)
			return 0, false, r
		}
		u.tr.EmitIOMMUTranslate(page, e.physPage, e.perm)
		return e.physPage | off, false, 0
	}

	u.tr.EmitIOTLBMiss(page)
	physPage, perm, r := u.walk(iova)
	if r == 0 {
		r = denied(perm, access)
	}
	if r != 0 {
		u.fault(iova, r, access, source)
		return 0, true, r
	}
	u.insert(page, physPage, perm)
	u.tr.EmitIOMMUTranslate(page, physPage, perm)
	return physPage | off, true, 0
}

// denied checks one access against an effective permission: the reason it is refused,
// or 0 if it is allowed (§10 reasons 2 and 3).
func denied(perm uint64, access uint8) sacc.FaultReason {
	if access == sacc.AccessWrite {
		if perm&sacc.PTEWrite == 0 {
			return sacc.FaultWriteDenied
		}
		return 0
	}
	if perm&sacc.PTERead == 0 {
		return sacc.FaultReadDenied
	}
	return 0
}

// root is the physical address of the top-level table: PT_ROOT is specified 4 KiB
// aligned (§10), and like every table address in an entry only bits 51:12 are used.
func (u *IOMMU) root() uint64 { return u.ptRoot & sacc.PTEAddrMask }

// walk performs the §10 page walk for iova (< 2^48): four levels of 512 entries indexed
// by IOVA bits 47:39, 38:30, 29:21 and 20:12. An entry with neither R nor W, or one whose
// address is not RAM, is not present. The effective permission is the AND of the
// permission bits of all four levels, as in VT-d: a table entry can take a right away
// from everything below it but cannot grant one its leaf does not.
func (u *IOMMU) walk(iova uint64) (physPage, perm uint64, reason sacc.FaultReason) {
	table := u.root()
	perm = sacc.PTEPermMask
	for level := 0; level < sacc.IOPTLevels; level++ {
		idx := sacc.IOVAIndex(iova, level)
		e, ok := u.readPTE(table + idx*sacc.IOPTEntrySize)
		u.tr.EmitIOMMUWalk(uint64(level), table, idx, uint64(e))
		if !ok || !e.Present() {
			return 0, 0, sacc.FaultNotPresent
		}
		perm &= e.Perm()
		table = e.Addr()
	}
	return table, perm, 0
}

// Walk is the read-only page walk for inspection (a monitor's `info iommu`): every level's
// table address, index and entry, without touching the IOTLB or logging anything. It
// stops after the first entry that is not present (or not RAM), and returns nil for an
// IOVA at or beyond 2^48. It walks PT_ROOT whether or not translation is enabled, and
// shows what the tables say now, which can differ from what the IOTLB remembers.
func (u *IOMMU) Walk(iova uint64) []WalkStep {
	if iova >= sacc.IOVALimit {
		return nil
	}
	var steps []WalkStep
	table := u.root()
	var b [sacc.IOPTEntrySize]byte
	for level := 0; level < sacc.IOPTLevels; level++ {
		idx := sacc.IOVAIndex(iova, level)
		s := WalkStep{Level: level, Table: table, Index: idx}
		if !u.mem.ReadPhys(table+idx*sacc.IOPTEntrySize, b[:]) {
			s.NotRAM = true
			steps = append(steps, s)
			break
		}
		s.Entry = sacc.PTE(binary.LittleEndian.Uint64(b[:]))
		steps = append(steps, s)
		if !s.Entry.Present() {
			break
		}
		table = s.Entry.Addr()
	}
	return steps
}

// lookup finds the IOTLB entry for an IOVA page and marks it most recently used.
// A linear scan over 32 fixed slots: no map, so nothing allocates and nothing depends
// on iteration order.
func (u *IOMMU) lookup(page uint64) *tlbEntry {
	for i := range u.tlb {
		e := &u.tlb[i]
		if e.valid && e.iovaPage == page {
			u.clock++
			e.stamp = u.clock
			return e
		}
	}
	return nil
}

// insert caches a successful translation, in a free slot if there is one, otherwise in
// place of the least recently used entry (§10: "32 entries, least recently used out").
func (u *IOMMU) insert(page, physPage, perm uint64) {
	victim := 0
	for i := range u.tlb {
		e := &u.tlb[i]
		if !e.valid {
			victim = i
			break
		}
		if e.stamp < u.tlb[victim].stamp {
			victim = i
		}
	}
	v := &u.tlb[victim]
	if v.valid {
		u.tr.EmitIOTLBEvict(v.iovaPage)
	}
	u.clock++
	*v = tlbEntry{valid: true, iovaPage: page, physPage: physPage, perm: perm, stamp: u.clock}
}

// IOTLB returns the cached translations, most recently used first (for inspection).
func (u *IOMMU) IOTLB() []TLBEntry {
	live := make([]tlbEntry, 0, len(u.tlb))
	for _, e := range u.tlb {
		if e.valid {
			live = append(live, e)
		}
	}
	sort.Slice(live, func(i, j int) bool { return live[i].stamp > live[j].stamp })
	out := make([]TLBEntry, len(live))
	for i, e := range live {
		out[i] = TLBEntry{IOVAPage: e.iovaPage, PhysPage: e.physPage, Perm: e.perm}
	}
	return out
}
