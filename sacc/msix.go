package sacc

import "encoding/binary"

// MSI-X (§4, §9).
const (
	MSIXVectors        = 2
	MSIXVectorComplete = 0
	MSIXVectorError    = 1

	MSIXTableBAR    = 1
	MSIXTableOffset = 0x000
	MSIXPBABAR      = 1
	MSIXPBAOffset   = 0x800
	MSIXEntrySize   = 16
	MSIXTableSize   = MSIXVectors * MSIXEntrySize

	MSIXEntryAddrLo  = 0
	MSIXEntryAddrHi  = 4
	MSIXEntryData    = 8
	MSIXEntryControl = 12
	MSIXEntryMasked  = 1 << 0

	// Message Control (capability + 2).
	MSIXCtrlTableSizeMask = 0x07FF
	MSIXCtrlFunctionMask  = 1 << 14
	MSIXCtrlEnable        = 1 << 15
	MSIXCtrlWritable      = MSIXCtrlFunctionMask | MSIXCtrlEnable

	// MSIXTableBIR and MSIXPBABIR are the capability's Table and PBA dwords: offset
	// with the BAR indicator in bits 2:0.
	MSIXTableBIR = MSIXTableOffset | MSIXTableBAR
	MSIXPBABIR   = MSIXPBAOffset | MSIXPBABAR
)

// MSIXEntry is a decoded MSI-X table entry.
type MSIXEntry struct {
	Addr    uint64
	Data    uint32
	Control uint32
}

// Masked reports whether the entry's vector is masked.
func (e MSIXEntry) Masked() bool { return e.Control&MSIXEntryMasked != 0 }

// Encode writes e into b (at least 16 bytes).
func (e MSIXEntry) Encode(b []byte) {
	_ = b[MSIXEntrySize-1]
	binary.LittleEndian.PutUint32(b[MSIXEntryAddrLo:], uint32(e.Addr))
	binary.LittleEndian.PutUint32(b[MSIXEntryAddrHi:], uint32(e.Addr>>32))
	binary.LittleEndian.PutUint32(b[MSIXEntryData:], e.Data)
	binary.LittleEndian.PutUint32(b[MSIXEntryControl:], e.Control)
}

// DecodeMSIXEntry reads an entry from b (at least 16 bytes).
func DecodeMSIXEntry(b []byte) MSIXEntry {
	_ = b[MSIXEntrySize-1]
	return MSIXEntry{
		Addr: uint64(binary.LittleEndian.Uint32(b[MSIXEntryAddrLo:])) |
			uint64(binary.LittleEndian.Uint32(b[MSIXEntryAddrHi:]))<<32,
		Data:    binary.LittleEndian.Uint32(b[MSIXEntryData:]),
		Control: binary.LittleEndian.Uint32(b[MSIXEntryControl:]),
	}
}
