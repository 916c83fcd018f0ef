package sacc

import "encoding/binary"

// IOMMU register block at IOMMUBase (§10).
const (
	IOMMURegCAP          = 0x00
	IOMMURegCTRL         = 0x08
	IOMMURegSTATUS       = 0x0C
	IOMMURegPTRoot       = 0x10 // 64-bit
	IOMMURegInvalidate   = 0x18 // 64-bit, write-only
	IOMMURegFaultBase    = 0x20 // 64-bit
	IOMMURegFaultSize    = 0x28
	IOMMURegFaultHead    = 0x2C
	IOMMURegFaultTail    = 0x30
	IOMMURegFaultMSIAddr = 0x38 // 64-bit
	IOMMURegFaultMSIData = 0x40

	IOMMUCtrlTranslate = 1 << 0

	IOMMUStatusActive     = 1 << 0
	IOMMUStatusFaultsLog  = 1 << 1 // fault log not empty
	IOMMUStatusOverflowed = 1 << 2

	IOTLBEntries           = 32
	IOPTLevels             = 4
	IOVAWidth              = 48
	IOPTEntries            = 512
	IOPTEntrySize          = 8
	IOMMUCapValue          = IOTLBEntries | IOPTLevels<<8 | IOVAWidth<<12
	InvalidateAll          = ^uint64(0)
	FaultRecordSize        = 16
	IOVALimit       uint64 = 1 << IOVAWidth
)

// IOMMURegisters lists the IOMMU's registers in offset order (§10). The 64-bit
// registers appear once, at their low offset.
var IOMMURegisters = []Register{
	{Offset: IOMMURegCAP, Name: "CAP", Access: AccessRO, Width: 32,
		Doc: "bits 7:0 IOTLB entries; bits 11:8 page-table levels; bits 19:12 input address width"},
	{Offset: IOMMURegCTRL, Name: "CTRL", Access: AccessRW, Width: 32, Doc: "bit 0 TRANSLATE_ENABLE",
		Bits: []Bits{{Name: "TRANSLATE_ENABLE", Mask: IOMMUCtrlTranslate, Doc: "translate every DMA of the device"}}},
	{Offset: IOMMURegSTATUS, Name: "STATUS", Access: AccessRO, Width: 32, Doc: "bit 0 active; bit 1 faults logged; bit 2 overflowed",
		Bits: []Bits{
			{Name: "ACTIVE", Mask: IOMMUStatusActive, Doc: "translation active"},
			{Name: "FAULTS", Mask: IOMMUStatusFaultsLog, Doc: "fault log not empty"},
			{Name: "OVERFLOWED", Mask: IOMMUStatusOverflowed, Doc: "fault log overflowed (cleared by the next write to FAULT_HEAD)"},
		}},
	{Offset: IOMMURegPTRoot, Name: "PT_ROOT", Access: AccessRW, Width: 64, Doc: "physical address of the top-level table (4 KiB aligned)"},
	{Offset: IOMMURegInvalidate, Name: "INVALIDATE", Access: AccessWO, Width: 64, Doc: "all ones: flush the IOTLB; otherwise the entry for that IOVA page"},
	{Offset: IOMMURegFaultBase, Name: "FAULT_BASE", Access: AccessRW, Width: 64, Doc: "fault log ring (16-byte records), 4 KiB aligned"},
	{Offset: IOMMURegFaultSize, Name: "FAULT_SIZE", Access: AccessRW, Width: 32, Doc: "records in the log (power of two)"},
	{Offset: IOMMURegFaultHead, Name: "FAULT_HEAD", Access: AccessRW, Width: 32, Doc: "next record software will read"},
	{Offset: IOMMURegFaultTail, Name: "FAULT_TAIL", Access: AccessRO, Width: 32, Doc: "next record the IOMMU will write"},
	{Offset: IOMMURegFaultMSIAddr, Name: "FAULT_MSI_ADDR", Access: AccessRW, Width: 64, Doc: "if non-zero, each logged fault also writes FAULT_MSI_DATA here"},
	{Offset: IOMMURegFaultMSIData, Name: "FAULT_MSI_DATA", Access: AccessRW, Width: 32, Doc: "the fault interrupt's data"},
}

// IOMMURegName names an IOMMU register offset, including the high halves of the
// 64-bit registers.
func IOMMURegName(off uint32) string { return regName(IOMMURegisters, off) }

// I/O page-table entries (§10).
const (
	PTERead     = 1 << 0
	PTEWrite    = 1 << 1
	PTEPermMask = PTERead | PTEWrite
	PTEAddrMask = 0x000F_FFFF_FFFF_F000 // bits 51:12
)

// PTE is an I/O page-table entry.
type PTE uint64

// MakePTE builds an entry pointing at a 4 KiB-aligned physical address.
func MakePTE(phys uint64, perm uint64) PTE { return PTE(phys&PTEAddrMask | perm&PTEPermMask) }

// Present reports whether the entry allows any access.
func (e PTE) Present() bool { return uint64(e)&PTEPermMask != 0 }

// Addr is the physical address of the next table or of the page.
func (e PTE) Addr() uint64 { return uint64(e) & PTEAddrMask }

// Perm is the entry's permission bits (PTERead, PTEWrite).
func (e PTE) Perm() uint64 { return uint64(e) & PTEPermMask }

// IOVAIndex returns the table index that IOVA uses at level (0 = top, bits 47:39;
// 3 = leaf, bits 20:12).
func IOVAIndex(iova uint64, level int) uint64 {
	shift := uint(PageShift + 9*(IOPTLevels-1-level))
	return iova >> shift & (IOPTEntries - 1)
}

// Fault reasons and access kinds (§10).
type FaultReason uint8

const (
	FaultNotPresent   FaultReason = 1
	FaultWriteDenied  FaultReason = 2
	FaultReadDenied   FaultReason = 3
	FaultAddressWidth FaultReason = 4
)

func (r FaultReason) String() string {
	switch r {
	case FaultNotPresent:
		return "not-present"
	case FaultWriteDenied:
		return "write-denied"
	case FaultReadDenied:
		return "read-denied"
	case FaultAddressWidth:
		return "address-width"
	}
	return "unknown"
}

// Fault record fields (§10).
const (
	FaultIOVAOff     = 0
	FaultSourceOff   = 8
	FaultReasonOff   = 10
	FaultAccessOff   = 11
	FaultReservedOff = 12
)

// DMA access kinds as the fault record encodes them.
const (
	AccessRead  = 0
	AccessWrite = 1
)

// FaultRecord is one entry of the IOMMU fault log.
type FaultRecord struct {
	IOVA     uint64
	SourceID uint16
	Reason   FaultReason
	Access   uint8 // AccessRead or AccessWrite
}

// Encode writes r into b (at least 16 bytes); the reserved word is written as 0.
func (r FaultRecord) Encode(b []byte) {
	_ = b[FaultRecordSize-1]
	binary.LittleEndian.PutUint64(b[FaultIOVAOff:], r.IOVA)
	binary.LittleEndian.PutUint16(b[FaultSourceOff:], r.SourceID)
	b[FaultReasonOff] = byte(r.Reason)
	b[FaultAccessOff] = r.Access
	binary.LittleEndian.PutUint32(b[FaultReservedOff:], 0)
}

// DecodeFaultRecord reads a record from b (at least 16 bytes).
func DecodeFaultRecord(b []byte) FaultRecord {
	_ = b[FaultRecordSize-1]
	return FaultRecord{
		IOVA:     binary.LittleEndian.Uint64(b[FaultIOVAOff:]),
		SourceID: binary.LittleEndian.Uint16(b[FaultSourceOff:]),
		Reason:   FaultReason(b[FaultReasonOff]),
		Access:   b[FaultAccessOff],
	}
}
