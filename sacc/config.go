package sacc

// Device identity (§2).
const (
	VendorID          = 0x1B36
	DeviceID          = 0x1092
	ClassCode         = 0x120000 // processing accelerator
	Revision          = 0x01
	SubsystemVendorID = 0x1B36
	SubsystemID       = 0x1092
	HeaderType        = 0x00
	InterruptPin      = 0x00

	AbsentVendorID = 0xFFFF
)

// Configuration space layout (§3).
const (
	ConfigSpaceSize       = 4096 // per function, through ECAM
	LegacyConfigSpaceSize = 256  // what mechanism #1 reaches

	CfgVendorID       = 0x00
	CfgDeviceID       = 0x02
	CfgCommand        = 0x04
	CfgStatus         = 0x06
	CfgRevision       = 0x08
	CfgClassCode      = 0x09 // prog-if at 0x09, subclass 0x0A, base class 0x0B
	CfgCacheLineSize  = 0x0C
	CfgLatencyTimer   = 0x0D
	CfgHeaderType     = 0x0E
	CfgBIST           = 0x0F
	CfgBAR0           = 0x10
	CfgBAR1           = 0x14
	CfgBAR2           = 0x18
	CfgBAR5           = 0x24
	CfgSubsystemVID   = 0x2C
	CfgSubsystemID    = 0x2E
	CfgExpansionROM   = 0x30
	CfgCapPtr         = 0x34
	CfgInterruptLine  = 0x3C
	CfgInterruptPin   = 0x3D
	CfgExtendedStart  = 0x100
	NumBARs           = 6
	CfgHeaderEnd      = 0x40
	CfgPCIeCapOffset  = 0x40
	CfgMSIXCapOffset  = 0x80
	CfgPCIeCapLength  = 0x3C // 0x40–0x7B
	CfgMSIXCapLength  = 12
	CapIDPCIe         = 0x10
	CapIDMSIX         = 0x11
	CapNextOffset     = 1 // byte after the capability ID
	CapPCIeFlagsOff   = 2
	CapPCIeDevCapOff  = 0x04
	CapPCIeDevCap2Off = 0x24
	CapPCIeLinkCapOff = 0x0C
	CapPCIeLinkStaOff = 0x12
	CapPCIeLinkCap2   = 0x2C
	CapMSIXControlOff = 2
	CapMSIXTableOff   = 4
	CapMSIXPBAOff     = 8
)

// COMMAND and STATUS bits (§3).
const (
	CmdMemorySpace  = 1 << 1
	CmdBusMaster    = 1 << 2
	CmdINTxDisable  = 1 << 10
	CmdWritableBits = CmdMemorySpace | CmdBusMaster | CmdINTxDisable

	StatusCapList = 1 << 4
)

// BARs (§3, §4).
const (
	BAR0Size = 8192
	BAR1Size = 4096
	BAR0Mask = ^uint32(BAR0Size - 1) // reads back after sizing: 0xFFFFE000
	BAR1Mask = ^uint32(BAR1Size - 1) // 0xFFFFF000

	// Low BAR bits: memory space, 32-bit, non-prefetchable are all zero.
	BARIOSpace      = 1 << 0
	BARType64       = 2 << 1
	BARPrefetchable = 1 << 3
	BARTypeMask     = 0xF
)

// BARSizeFromMask turns the value read back after writing all ones to a memory BAR
// into the BAR's size, masking the type bits first.
func BARSizeFromMask(readback uint32) uint64 {
	m := readback &^ BARTypeMask
	if m == 0 {
		return 0
	}
	return uint64(^m) + 1
}

// PCI Express capability values (§3): version 2, endpoint, 8 GT/s x4.
const (
	PCIeCapVersion    = 2
	PCIeDevTypeEP     = 0
	PCIeLinkSpeed8GT  = 3 // encoding of 8.0 GT/s in Link Capabilities / Status
	PCIeLinkWidth     = 4
	PCIeLinkSpeedMbps = 8000 // transfer rate per lane, in megatransfers/s
)

// PCIeLinkStatus is the Link Status register value: current speed in bits 3:0,
// negotiated width in bits 9:4.
const PCIeLinkStatus = PCIeLinkSpeed8GT | PCIeLinkWidth<<4

// PCIeLinkCapabilities is the Link Capabilities register value: max speed, max width.
const PCIeLinkCapabilities = PCIeLinkSpeed8GT | PCIeLinkWidth<<4

// PCIeLinkCapabilities2 lists the supported speeds 2.5, 5 and 8 GT/s (bits 3:1).
const PCIeLinkCapabilities2 = 0b1110
