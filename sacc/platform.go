package sacc

// Guest-physical address map of the platform (§1).
const (
	PageSize  = 4096
	PageShift = 12
	PageMask  = PageSize - 1

	DefaultRAMSize = 128 << 20 // 128 MiB

	ECAMBase = 0xB000_0000
	ECAMSize = 0x1000_0000 // buses 0–255, 1 MiB each

	MMIOWindowBase = 0xC000_0000
	MMIOWindowEnd  = 0xFEBF_FFFF // inclusive

	IOMMUBase = 0xFED9_0000
	IOMMUSize = 0x1000

	IntWindowBase = 0xFEE0_0000
	IntWindowSize = 0x10_0000

	// Legacy configuration mechanism #1 (§1).
	PortConfigAddress = 0xCF8
	PortConfigData    = 0xCFC // data window 0xCFC–0xCFF

	ConfigAddressEnable = 1 << 31

	MaxPort = 0xFFFF
)

// The SACC endpoint's position in the PCI hierarchy (§1).
const (
	SACCBus      = 0
	SACCDevice   = 3
	SACCFunction = 0
)

// ECAMAddress returns the guest-physical address of a configuration register (§1).
func ECAMAddress(bus, dev, fn, reg uint32) uint64 {
	return ECAMBase + uint64(bus)<<20 + uint64(dev)<<15 + uint64(fn)<<12 + uint64(reg)
}

// ConfigAddress returns the CONFIG_ADDRESS value (port 0xCF8) that selects the dword
// containing reg of bus:dev.fn (§1).
func ConfigAddress(bus, dev, fn, reg uint32) uint32 {
	return ConfigAddressEnable | (bus&0xFF)<<16 | (dev&0x1F)<<11 | (fn&7)<<8 | reg&0xFC
}

// SourceID is the requester ID of a function as the IOMMU reports it (§10).
func SourceID(bus, dev, fn uint32) uint16 {
	return uint16(bus<<8 | dev<<3 | fn)
}

// InIntWindow reports whether a guest-physical address lies in the interrupt window.
func InIntWindow(addr uint64) bool {
	return addr >= IntWindowBase && addr < IntWindowBase+IntWindowSize
}

// MSIVector is the vector an interrupt-window write raises (§1).
func MSIVector(data uint32) uint8 { return uint8(data) }
