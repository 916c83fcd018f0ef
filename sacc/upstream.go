package sacc

// Upstream v0.1 as its own QEMU model builds the function (github.com/jnros/sacc,
// qemu/sacc.c, on QEMU's PCI core), where it differs from v1: what the
// upstream-v0.1 profile shows. docs/SPEC.md, "Upstream v0.1 and v1: every
// difference", lists these and everything else that differs.
const (
	// Upstream's class sets no subsystem IDs, so QEMU gives the function its own
	// defaults (pci_set_default_subsystem_id: PCI_SUBVENDOR_ID_REDHAT_QUMRANET and
	// PCI_SUBDEVICE_ID_QEMU). v0.1's text says "default to vendor/device"; v1 makes
	// them 0x1B36/0x1092.
	UpstreamSubsystemVendorID = 0x1AF4
	UpstreamSubsystemID       = 0x1100

	// QEMU fills an endpoint's link as x1 at 2.5 GT/s with ASPM L0s supported and
	// port number 0 (pcie_cap_v1_fill), and leaves the Supported Link Speeds vector
	// of Link Capabilities 2 at zero below 8 GT/s (pcie_cap_fill_lnk).
	PCIeLinkSpeed2_5GT        = 1
	PCIeLinkASPML0s           = 1 << 10
	UpstreamLinkWidth         = 1
	UpstreamLinkCapabilities  = PCIeLinkSpeed2_5GT | UpstreamLinkWidth<<4 | PCIeLinkASPML0s
	UpstreamLinkStatus        = PCIeLinkSpeed2_5GT | UpstreamLinkWidth<<4
	UpstreamLinkCapabilities2 = 0

	// Device Capabilities: role-based error reporting (pcie_cap_v1_fill); Device
	// Capabilities 2: extended fmt field and end-end TLP prefix (pcie_cap_init).
	PCIeDevCapRBER           = 1 << 15
	PCIeDevCap2EFF           = 1 << 20
	PCIeDevCap2EETLPP        = 1 << 21
	UpstreamDevCapabilities  = PCIeDevCapRBER
	UpstreamDevCapabilities2 = PCIeDevCap2EFF | PCIeDevCap2EETLPP

	// Upstream's specification allocates the MSI-X capability dynamically; QEMU's
	// pci_find_space would put it in the first free bytes after the 60-byte v2
	// PCIe capability at 0x40, at 0x7C (v1 fixes it at 0x80). Upstream's device
	// has no MSI-X capability at all.
	UpstreamMSIXCapOffsetQEMU = 0x7C

	// Upstream's run_qemu.sh puts the device behind a pcie-root-port on a pxb-pcie
	// host bridge whose buses start at 0x80; the guest finds it at 0000:87:00.0.
	// The profile keeps the machine's one function at 00:03.0.
	UpstreamBus      = 0x87
	UpstreamDevice   = 0
	UpstreamFunction = 0
)
