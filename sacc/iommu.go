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

// IOMMURegName names an IOMMU register offset (64-bit registers by their low half).
func IOMMURegName(off uint32) string {
	switch off {
	case IOMMURegCAP:
		return "CAP"
	case IOMMURegCTRL:
		return "CTRL"
	case IOMMURegSTATUS:
		return "STATUS"
	case IOMMURegPTRoot:
		return "PT_ROOT"
	case IOMMURegPTRoot + 4:
		return "PT_ROOT_HI"
	case IOMMURegInvalidate:
		return "INVALIDATE"
	case IOMMURegInvalidate + 4:
		return "INVALIDATE_HI"
	case IOMMURegFaultBase:
		return "FAULT_BASE"
	case IOMMURegFaultBase + 4:
		return "FAULT_BASE_HI"
	case IOMMURegFaultSize:
		return "FAULT_SIZE"
	case IOMMURegFaultHead:
		return "FAULT_HEAD"
	case IOMMURegFaultTail:
		return "FAULT_TAIL"
	case IOMMURegFaultMSIAddr:
		return "FAULT_MSI_ADDR"
	case IOMMURegFaultMSIAddr + 4:
		return "FAULT_MSI_ADDR_HI"
	case IOMMURegFaultMSIData:
		return "FAULT_MSI_DATA"
	}
	return "reserved"
}

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
	binary.LittleEndian.PutUint64(b[0:], r.IOVA)
	binary.LittleEndian.PutUint16(b[8:], r.SourceID)
	b[10] = byte(r.Reason)
	b[11] = r.Access
	binary.LittleEndian.PutUint32(b[12:], 0)
}

// DecodeFaultRecord reads a record from b (at least 16 bytes).
func DecodeFaultRecord(b []byte) FaultRecord {
	_ = b[FaultRecordSize-1]
	return FaultRecord{
		IOVA:     binary.LittleEndian.Uint64(b[0:]),
		SourceID: binary.LittleEndian.Uint16(b[8:]),
		Reason:   FaultReason(b[10]),
		Access:   b[11],
	}
}
