package conformance

import (
	"testing"

	"github.com/saccbook/saccbook/sacc"
)

// §2: the device's identity in its type-0 header.
func TestDeviceIdentity(t *testing.T) {
	c := newClient(t)
	fields := []struct {
		name  string
		reg   uint32
		width int
		want  uint32
	}{
		{"vendor ID", sacc.CfgVendorID, 16, sacc.VendorID},
		{"device ID", sacc.CfgDeviceID, 16, sacc.DeviceID},
		{"revision", sacc.CfgRevision, 8, sacc.Revision},
		{"prog-if", sacc.CfgClassCode, 8, sacc.ClassCode & 0xFF},
		{"subclass", sacc.CfgClassCode + 1, 8, sacc.ClassCode >> 8 & 0xFF},
		{"base class", sacc.CfgClassCode + 2, 8, sacc.ClassCode >> 16},
		{"header type", sacc.CfgHeaderType, 8, sacc.HeaderType},
		{"subsystem vendor ID", sacc.CfgSubsystemVID, 16, sacc.SubsystemVendorID},
		{"subsystem ID", sacc.CfgSubsystemID, 16, sacc.SubsystemID},
		{"interrupt pin", sacc.CfgInterruptPin, 8, sacc.InterruptPin},
	}
	for _, f := range fields {
		var got uint32
		if f.width == 16 {
			got = uint32(c.cfgRead16(f.reg))
		} else {
			got = uint32(c.cfgRead8(f.reg))
		}
		if got != f.want {
			t.Errorf("%s (config 0x%02x) = 0x%x, want 0x%x", f.name, f.reg, got, f.want)
		}
	}
	if class := c.cfgRead32(sacc.CfgRevision) >> 8; class != sacc.ClassCode {
		t.Errorf("class code = 0x%06x, want 0x%06x", class, sacc.ClassCode)
	}
}

// §2 and §3: the identity values and the capability list are the device's, not
// software's: writing all ones over them changes nothing.
func TestIdentityAndCapabilityHeadersIgnoreWrites(t *testing.T) {
	c := newClient(t)
	regs := []uint32{sacc.CfgVendorID, sacc.CfgRevision, sacc.CfgSubsystemVID, sacc.CfgCapPtr,
		sacc.CfgPCIeCapOffset, sacc.CfgMSIXCapOffset + sacc.CapMSIXTableOff, sacc.CfgMSIXCapOffset + sacc.CapMSIXPBAOff}
	before := map[uint32]uint32{}
	for _, reg := range regs {
		before[reg] = c.cfgRead32(reg)
	}
	hdrType := c.cfgRead8(sacc.CfgHeaderType)
	msixIDs := c.cfgRead16(sacc.CfgMSIXCapOffset)
	for _, reg := range regs {
		c.cfgWrite32(reg, 0xFFFF_FFFF)
	}
	c.cfgWrite32(sacc.CfgCacheLineSize, 0xFFFF_FFFF)
	c.cfgWrite32(sacc.CfgMSIXCapOffset, 0x0000_FFFF) // ID and next; Message Control 0
	for _, reg := range regs {
		if got := c.cfgRead32(reg); got != before[reg] {
			t.Errorf("config dword 0x%02x = 0x%08x after writing all ones, was 0x%08x", reg, got, before[reg])
		}
	}
	if got := c.cfgRead8(sacc.CfgHeaderType); got != hdrType {
		t.Errorf("header type = 0x%02x after a write, was 0x%02x", got, hdrType)
	}
	if got := c.cfgRead16(sacc.CfgMSIXCapOffset); got != msixIDs {
		t.Errorf("MSI-X capability ID/next = 0x%04x after a write, was 0x%04x", got, msixIDs)
	}
}

// §3: "STATUS (0x06) bit 4 capabilities list = 1; capabilities pointer at 0x34 =
// 0x40."
func TestStatusCapabilitiesListAndPointer(t *testing.T) {
	c := newClient(t)
	if st := c.cfgRead16(sacc.CfgStatus); st&sacc.StatusCapList == 0 {
		t.Errorf("STATUS = 0x%04x, capabilities-list bit 4 clear", st)
	}
	if p := c.cfgRead8(sacc.CfgCapPtr); p != sacc.CfgPCIeCapOffset {
		t.Errorf("capabilities pointer = 0x%02x, want 0x40", p)
	}
}

// §3: walking the list from 0x34 finds the PCI Express capability (ID 0x10) at 0x40,
// then the MSI-X capability (ID 0x11, v1: at 0x80), and nothing else.
func TestCapabilityListWalkFindsPCIeThenMSIX(t *testing.T) {
	c := newClient(t)
	got := c.capabilities()
	want := []capability{{sacc.CfgPCIeCapOffset, sacc.CapIDPCIe}, {sacc.CfgMSIXCapOffset, sacc.CapIDMSIX}}
	if len(got) != len(want) {
		t.Fatalf("capability list = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("capability list = %+v, want %+v", got, want)
		}
	}
}

// §3: "PCI Express capability (ID 0x10), version 2, device/port type 0 (endpoint)".
func TestPCIeCapabilityVersion2Endpoint(t *testing.T) {
	c := newClient(t)
	flags := c.cfgRead16(sacc.CfgPCIeCapOffset + sacc.CapPCIeFlagsOff)
	if v := flags & 0xF; v != sacc.PCIeCapVersion {
		t.Errorf("PCIe capability version = %d, want 2 (flags 0x%04x)", v, flags)
	}
	if typ := flags >> 4 & 0xF; typ != sacc.PCIeDevTypeEP {
		t.Errorf("PCIe device/port type = %d, want 0 (endpoint; flags 0x%04x)", typ, flags)
	}
}

// §3 (v1): "PCIe capability link status reports a plausible link (v1: 8 GT/s,
// width x4)". Link Status: current speed in bits 3:0 (3 = 8 GT/s), negotiated width
// in bits 9:4.
func TestPCIeLinkStatus8GTx4(t *testing.T) {
	c := newClient(t)
	ls := c.cfgRead16(sacc.CfgPCIeCapOffset + sacc.CapPCIeLinkStaOff)
	if speed := ls & 0xF; speed != sacc.PCIeLinkSpeed8GT {
		t.Errorf("Link Status speed = %d, want %d (8 GT/s); Link Status 0x%04x", speed, sacc.PCIeLinkSpeed8GT, ls)
	}
	if width := ls >> 4 & 0x3F; width != sacc.PCIeLinkWidth {
		t.Errorf("Link Status width = x%d, want x4; Link Status 0x%04x", width, ls)
	}
}

// §3 (v1): the link is "plausible": Link Capabilities allow at least the speed and
// width Link Status reports, and Link Capabilities 2, if filled in, lists 8 GT/s.
func TestPCIeLinkCapabilitiesAllowTheLink(t *testing.T) {
	c := newClient(t)
	lc := c.cfgRead32(sacc.CfgPCIeCapOffset + sacc.CapPCIeLinkCapOff)
	if speed := lc & 0xF; speed < sacc.PCIeLinkSpeed8GT {
		t.Errorf("Link Capabilities max speed = %d, below the 8 GT/s link (0x%08x)", speed, lc)
	}
	if width := lc >> 4 & 0x3F; width < sacc.PCIeLinkWidth {
		t.Errorf("Link Capabilities max width = x%d, below the x4 link (0x%08x)", width, lc)
	}
	if lc2 := c.cfgRead32(sacc.CfgPCIeCapOffset + sacc.CapPCIeLinkCap2); lc2 != 0 && lc2&(1<<sacc.PCIeLinkSpeed8GT) == 0 {
		t.Errorf("Link Capabilities 2 = 0x%08x: supported-speeds vector lacks 8 GT/s (bit 3)", lc2)
	}
}

// §4 and §9: the MSI-X capability locates the table at BAR1 offset 0 and the PBA at
// BAR1 offset 0x800 (offset with the BAR indicator in bits 2:0).
func TestMSIXCapabilityPointsIntoBAR1(t *testing.T) {
	c := newClient(t)
	capOff := c.findCap(sacc.CapIDMSIX)
	if v := c.cfgRead32(capOff + sacc.CapMSIXTableOff); v != sacc.MSIXTableBIR {
		t.Errorf("MSI-X Table offset/BIR = 0x%08x, want 0x%08x (offset 0, BAR1)", v, sacc.MSIXTableBIR)
	}
	if v := c.cfgRead32(capOff + sacc.CapMSIXPBAOff); v != sacc.MSIXPBABIR {
		t.Errorf("MSI-X PBA offset/BIR = 0x%08x, want 0x%08x (offset 0x800, BAR1)", v, sacc.MSIXPBABIR)
	}
}

// §3: "0x100+: extended configuration space: empty (the dword at 0x100 reads 0)".
func TestExtendedConfigSpaceEmpty(t *testing.T) {
	c := newClient(t)
	for _, reg := range []uint32{sacc.CfgExtendedStart, 0x104, 0x200, 0x800, sacc.ConfigSpaceSize - 4} {
		if v := c.readl(ecam(reg)); v != 0 {
			t.Errorf("extended config dword 0x%03x = 0x%08x, want 0", reg, v)
		}
	}
}

// §3 (v1): "BAR0 reads 0xFFFFE000 (8 KiB, 32-bit, non-prefetchable memory)" after
// 0xFFFFFFFF is written to it.
func TestBAR0SizingReads0xFFFFE000(t *testing.T) {
	c := newClient(t)
	c.cfgWrite32(sacc.CfgBAR0, 0xFFFF_FFFF)
	if v := c.cfgRead32(sacc.CfgBAR0); v != 0xFFFF_E000 {
		t.Fatalf("BAR0 after writing all ones = 0x%08x, want 0xffffe000", v)
	}
	if size := sacc.BARSizeFromMask(c.cfgRead32(sacc.CfgBAR0)); size != sacc.BAR0Size {
		t.Fatalf("BAR0 size = %d, want %d", size, sacc.BAR0Size)
	}
}

// §3 (v1): "BAR1 reads 0xFFFFF000 (4 KiB)".
func TestBAR1SizingReads0xFFFFF000(t *testing.T) {
	c := newClient(t)
	c.cfgWrite32(sacc.CfgBAR1, 0xFFFF_FFFF)
	if v := c.cfgRead32(sacc.CfgBAR1); v != 0xFFFF_F000 {
		t.Fatalf("BAR1 after writing all ones = 0x%08x, want 0xfffff000", v)
	}
}

// §3 (v1): "BAR2–BAR5 and the expansion ROM BAR are not implemented: they read 0 and
// ignore writes."
func TestUnimplementedBARsReadZero(t *testing.T) {
	c := newClient(t)
	regs := []uint32{sacc.CfgBAR2, sacc.CfgBAR2 + 4, sacc.CfgBAR2 + 8, sacc.CfgBAR5, sacc.CfgExpansionROM}
	for _, reg := range regs {
		for _, v := range []uint32{0xFFFF_FFFF, 0xD000_0000} {
			c.cfgWrite32(reg, v)
			if got := c.cfgRead32(reg); got != 0 {
				t.Errorf("config 0x%02x after writing 0x%08x reads 0x%08x, want 0", reg, v, got)
			}
		}
	}
}

// §3: a BAR takes the address software assigns (aligned to its size), which is
// where the firmware step puts it.
func TestBARAssignmentReadsBack(t *testing.T) {
	c := newClient(t)
	c.cfgWrite32(sacc.CfgBAR0, 0xFFFF_FFFF)
	c.cfgWrite32(sacc.CfgBAR0, bar0Base)
	c.cfgWrite32(sacc.CfgBAR1, 0xFFFF_FFFF)
	c.cfgWrite32(sacc.CfgBAR1, bar1Base)
	if v := c.cfgRead32(sacc.CfgBAR0); v != bar0Base {
		t.Errorf("BAR0 = 0x%08x after assigning 0x%08x", v, bar0Base)
	}
	if v := c.cfgRead32(sacc.CfgBAR1); v != bar1Base {
		t.Errorf("BAR1 = 0x%08x after assigning 0x%08x", v, bar1Base)
	}
}

// §3: COMMAND bit 1 memory-space enable, bit 2 bus-master enable and bit 10 INTx
// disable are the bits the driver sets; they read back as written.
func TestCommandBitsReadBack(t *testing.T) {
	c := newClient(t)
	for _, v := range []uint16{sacc.CmdMemorySpace, sacc.CmdBusMaster, sacc.CmdINTxDisable, sacc.CmdWritableBits, 0} {
		c.setCommand(v)
		if got := c.cfgRead16(sacc.CfgCommand) & sacc.CmdWritableBits; got != v {
			t.Errorf("COMMAND bits 1,2,10 = 0x%03x after writing 0x%03x", got, v)
		}
	}
}

// §3 (v1): "COMMAND bit 1 clear: BAR0 and BAR1 do not decode (reads return all
// ones, writes dropped)."
func TestBARsDoNotDecodeWithoutMemorySpaceEnable(t *testing.T) {
	c := newClient(t)
	c.cfgWrite32(sacc.CfgBAR0, bar0Base)
	c.cfgWrite32(sacc.CfgBAR1, bar1Base)
	c.setCommand(sacc.CmdMemorySpace)
	entryData := c.readl(bar1Base + sacc.MSIXEntryData)

	c.setCommand(sacc.CmdBusMaster)
	if v := c.readl(bar0Base + sacc.RegMAGIC); v != 0xFFFF_FFFF {
		t.Errorf("BAR0 MAGIC with memory space disabled = 0x%x, want all ones", v)
	}
	if v := c.readl(bar0Base + sacc.RegCQHeadDB); v != 0xFFFF_FFFF {
		t.Errorf("BAR0 doorbell page with memory space disabled = 0x%x, want all ones", v)
	}
	if v := c.readl(bar1Base + sacc.MSIXEntryData); v != 0xFFFF_FFFF {
		t.Errorf("BAR1 MSI-X entry 0 data with memory space disabled = 0x%x, want all ones", v)
	}
	c.writel(bar0Base+sacc.RegSCRATCH, 0x5A5A_5A5A)
	c.writel(bar1Base+sacc.MSIXEntryData, ^entryData)

	c.setCommand(sacc.CmdBusMaster | sacc.CmdMemorySpace)
	if v := c.readl(bar0Base + sacc.RegMAGIC); v != sacc.MagicValue {
		t.Errorf("BAR0 MAGIC with memory space enabled = 0x%x, want 0x%x", v, sacc.MagicValue)
	}
	if v := c.readl(bar0Base + sacc.RegSCRATCH); v != 0 {
		t.Errorf("SCRATCH = 0x%x: a write made while memory space was disabled landed", v)
	}
	if v := c.readl(bar1Base + sacc.MSIXEntryData); v != entryData {
		t.Errorf("MSI-X entry 0 data = 0x%x, was 0x%x: a write made while memory space was disabled landed", v, entryData)
	}
}
