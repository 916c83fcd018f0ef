package pci_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/pci"
)

// newSACC builds the SACC endpoint's function as §2–§3 describe it.
func newSACC() *pci.Function {
	return pci.New(pci.Header{
		VendorID:          sacc.VendorID,
		DeviceID:          sacc.DeviceID,
		ClassCode:         sacc.ClassCode,
		Revision:          sacc.Revision,
		SubsystemVendorID: sacc.SubsystemVendorID,
		SubsystemID:       sacc.SubsystemID,
		HeaderType:        sacc.HeaderType,
		InterruptPin:      sacc.InterruptPin,
		BARSizes:          [sacc.NumBARs]uint64{sacc.BAR0Size, sacc.BAR1Size},
	})
}

func bar(i int) uint32 { return uint32(sacc.CfgBAR0 + 4*i) }

// writableMask is the §3 write mask of the header, byte by byte, written out from the
// datasheet independently of pci.New. Every other byte of the 4 KiB space is read-only.
func writableMask() map[uint32]byte {
	m := map[uint32]byte{
		sacc.CfgCommand:       sacc.CmdWritableBits & 0xFF,
		sacc.CfgCommand + 1:   sacc.CmdWritableBits >> 8,
		sacc.CfgCacheLineSize: 0xFF,
		sacc.CfgLatencyTimer:  0xFF,
		sacc.CfgInterruptLine: 0xFF,
	}
	for i, mask := range []uint32{sacc.BAR0Mask, sacc.BAR1Mask} {
		for b := range uint32(4) {
			m[bar(i)+b] = byte(mask >> (8 * b))
		}
	}
	return m
}

func TestPowerOnHeader(t *testing.T) {
	f := newSACC()
	cases := []struct {
		name string
		reg  uint32
		size int
		want uint32
	}{
		{"vendor ID", sacc.CfgVendorID, 2, sacc.VendorID},
		{"device ID", sacc.CfgDeviceID, 2, sacc.DeviceID},
		{"vendor and device as a dword", sacc.CfgVendorID, 4, sacc.DeviceID<<16 | sacc.VendorID},
		{"COMMAND is 0", sacc.CfgCommand, 2, 0},
		{"STATUS without capabilities", sacc.CfgStatus, 2, 0},
		{"revision", sacc.CfgRevision, 1, sacc.Revision},
		{"prog-if", sacc.CfgClassCode, 1, sacc.ClassCode & 0xFF},
		{"subclass", sacc.CfgClassCode + 1, 1, sacc.ClassCode >> 8 & 0xFF},
		{"class code and revision", sacc.CfgRevision, 4, sacc.ClassCode<<8 | sacc.Revision},
		{"base class", sacc.CfgClassCode + 2, 1, sacc.ClassCode >> 16},
		{"header type", sacc.CfgHeaderType, 1, sacc.HeaderType},
		{"BAR0 unassigned", sacc.CfgBAR0, 4, 0},
		{"BAR1 unassigned", sacc.CfgBAR1, 4, 0},
		{"subsystem vendor ID", sacc.CfgSubsystemVID, 2, sacc.SubsystemVendorID},
		{"subsystem ID", sacc.CfgSubsystemID, 2, sacc.SubsystemID},
		{"expansion ROM", sacc.CfgExpansionROM, 4, 0},
		{"capabilities pointer", sacc.CfgCapPtr, 1, 0},
		{"interrupt pin", sacc.CfgInterruptPin, 1, sacc.InterruptPin},
		{"extended space", sacc.CfgExtendedStart, 4, 0},
	}
	for _, c := range cases {
		if got := f.Read(c.reg, c.size); got != c.want {
			t.Errorf("%s: Read(%#x, %d) = %#x, want %#x", c.name, c.reg, c.size, got, c.want)
		}
	}
	if f.MemoryEnabled() || f.BusMaster() {
		t.Error("memory space or bus master enabled at power-on")
	}
	for i := range sacc.NumBARs {
		if f.BARAddress(i) != 0 {
			t.Errorf("BAR%d address %#x at power-on", i, f.BARAddress(i))
		}
	}
}

func TestBARSizing(t *testing.T) {
	cases := []struct {
		bar      int
		size     uint64
		readback uint32
	}{
		{0, sacc.BAR0Size, sacc.BAR0Mask},
		{1, sacc.BAR1Size, sacc.BAR1Mask},
		{2, 0, 0},
		{3, 0, 0},
		{4, 0, 0},
		{5, 0, 0},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("BAR%d", c.bar), func(t *testing.T) {
			f := newSACC()
			if f.BARSize(c.bar) != c.size {
				t.Errorf("BARSize = %d, want %d", f.BARSize(c.bar), c.size)
			}
			f.Write(bar(c.bar), 4, 0xFFFFFFFF)
			got := f.Read(bar(c.bar), 4)
			if got != c.readback {
				t.Errorf("after writing all ones, reads %#08x, want %#08x", got, c.readback)
			}
			if sz := sacc.BARSizeFromMask(got); sz != c.size {
				t.Errorf("size from the read-back mask = %d, want %d", sz, c.size)
			}
			if got&sacc.BARTypeMask != 0 {
				t.Errorf("type bits %#x, want 0 (32-bit non-prefetchable memory)", got&sacc.BARTypeMask)
			}
			// Sizing with byte writes gives the same mask.
			g := newSACC()
			for b := range uint32(4) {
				g.Write(bar(c.bar)+b, 1, 0xFF)
			}
			if got := g.Read(bar(c.bar), 4); got != c.readback {
				t.Errorf("after byte writes of 0xFF, reads %#08x, want %#08x", got, c.readback)
			}
		})
	}
}

func TestBARSizingTheSACCNumbers(t *testing.T) {
	// The §3 figures, spelled out once.
	f := newSACC()
	f.Write(sacc.CfgBAR0, 4, 0xFFFFFFFF)
	f.Write(sacc.CfgBAR1, 4, 0xFFFFFFFF)
	if got := f.Read(sacc.CfgBAR0, 4); got != 0xFFFFE000 {
		t.Errorf("BAR0 sizing reads %#x, want 0xFFFFE000", got)
	}
	if got := f.Read(sacc.CfgBAR1, 4); got != 0xFFFFF000 {
		t.Errorf("BAR1 sizing reads %#x, want 0xFFFFF000", got)
	}
}

func TestBARAssignment(t *testing.T) {
	cases := []struct {
		name  string
		bar   int
		write uint32
		want  uint32
	}{
		{"BAR0 at the window base", 0, sacc.MMIOWindowBase, sacc.MMIOWindowBase},
		{"BAR0 drops bits below 8 KiB", 0, sacc.MMIOWindowBase + 0x1234, sacc.MMIOWindowBase},
		{"BAR0 type bits read 0", 0, sacc.MMIOWindowBase | 0xF, sacc.MMIOWindowBase},
		{"BAR1 keeps 4 KiB alignment", 1, sacc.MMIOWindowBase + 0x3000, sacc.MMIOWindowBase + 0x3000},
		{"BAR1 drops bits below 4 KiB", 1, sacc.MMIOWindowBase + 0x3FFF, sacc.MMIOWindowBase + 0x3000},
		{"BAR0 back to 0", 0, 0, 0},
		{"BAR2 ignores an address", 2, sacc.MMIOWindowBase, 0},
		{"BAR5 ignores an address", 5, 0xDEADBEEF, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newSACC()
			f.Write(bar(c.bar), 4, 0xFFFFFFFF)
			f.Write(bar(c.bar), 4, c.write)
			if got := f.Read(bar(c.bar), 4); got != c.want {
				t.Errorf("reads %#x, want %#x", got, c.want)
			}
			if got := f.BARAddress(c.bar); got != uint64(c.want) {
				t.Errorf("BARAddress = %#x, want %#x", got, c.want)
			}
		})
	}
}

func TestUnimplementedBARsReadZeroAndIgnoreWrites(t *testing.T) {
	regs := []struct {
		name string
		reg  uint32
	}{
		{"BAR2", sacc.CfgBAR2},
		{"BAR3", bar(3)},
		{"BAR4", bar(4)},
		{"BAR5", sacc.CfgBAR5},
		{"expansion ROM", sacc.CfgExpansionROM},
	}
	for _, r := range regs {
		t.Run(r.name, func(t *testing.T) {
			f := newSACC()
			for _, size := range []int{1, 2, 4} {
				for off := uint32(0); off+uint32(size) <= 4; off++ {
					for _, v := range []uint32{0xFFFFFFFF, 0xC0000000, 0x12345678} {
						f.Write(r.reg+off, size, v)
						if got := f.Read(r.reg, 4); got != 0 {
							t.Fatalf("after Write(%#x, %d, %#x), reads %#x, want 0", r.reg+off, size, v, got)
						}
					}
				}
			}
		})
	}
}

func TestReadOnlyHeaderFieldsKeepTheirValue(t *testing.T) {
	fields := []struct {
		name string
		reg  uint32
		size int
	}{
		{"vendor ID", sacc.CfgVendorID, 2},
		{"device ID", sacc.CfgDeviceID, 2},
		{"STATUS", sacc.CfgStatus, 2},
		{"revision", sacc.CfgRevision, 1},
		{"class code", sacc.CfgClassCode, 3},
		{"header type", sacc.CfgHeaderType, 1},
		{"BIST", sacc.CfgBIST, 1},
		{"cardbus CIS", 0x28, 4},
		{"subsystem vendor ID", sacc.CfgSubsystemVID, 2},
		{"subsystem ID", sacc.CfgSubsystemID, 2},
		{"capabilities pointer", sacc.CfgCapPtr, 1},
		{"reserved 0x35–0x3B", sacc.CfgCapPtr + 1, 7},
		{"interrupt pin", sacc.CfgInterruptPin, 1},
		{"min grant, max latency", sacc.CfgInterruptPin + 1, 2},
		{"PCIe capability ID and next", sacc.CfgPCIeCapOffset, 2},
		{"MSI-X capability ID and next", sacc.CfgMSIXCapOffset, 2},
		{"extended space", sacc.CfgExtendedStart, 4},
		{"last dword", sacc.ConfigSpaceSize - 4, 4},
	}
	for _, fld := range fields {
		t.Run(fld.name, func(t *testing.T) {
			f := newSACC()
			f.AddCapability(sacc.CfgPCIeCapOffset, sacc.CapIDPCIe)
			f.AddCapability(sacc.CfgMSIXCapOffset, sacc.CapIDMSIX)
			want := make([]byte, fld.size)
			for i := range want {
				want[i] = f.Get8(fld.reg + uint32(i))
			}
			// Every width, at every offset whose access overlaps the field.
			for _, size := range []int{1, 2, 4} {
				for r := int(fld.reg) - size + 1; r < int(fld.reg)+fld.size; r++ {
					if r < 0 {
						continue
					}
					reg := uint32(r)
					for _, v := range []uint32{0xFFFFFFFF, 0, 0xA5A55A5A} {
						f.Write(reg, size, v)
						for i := range want {
							if got := f.Get8(fld.reg + uint32(i)); got != want[i] {
								t.Fatalf("Write(%#x, %d, %#x) changed byte %#x to %#x, want %#x",
									reg, size, v, fld.reg+uint32(i), got, want[i])
							}
						}
					}
				}
			}
		})
	}
}

func TestWriteMaskOfEveryByte(t *testing.T) {
	// Every access width at every offset of the 4 KiB space: each byte changes
	// exactly in its §3-writable bits.
	mask := writableMask()
	for _, size := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("size %d", size), func(t *testing.T) {
			f := newSACC()
			for reg := uint32(0); reg < sacc.ConfigSpaceSize; reg++ {
				for _, v := range []uint32{0xFFFFFFFF, 0x5AA5C33C, 0} {
					before := make([]byte, size)
					for i := range before {
						if r := reg + uint32(i); r < sacc.ConfigSpaceSize {
							before[i] = f.Get8(r)
						}
					}
					f.Write(reg, size, v)
					for i := range size {
						r := reg + uint32(i)
						if r >= sacc.ConfigSpaceSize {
							break
						}
						m := mask[r]
						want := before[i]&^m | byte(v>>(8*i))&m
						if got := f.Get8(r); got != want {
							t.Fatalf("Write(%#x, %d, %#x): byte %#x = %#x, want %#x (writable mask %#x)",
								reg, size, v, r, got, want, m)
						}
					}
				}
			}
		})
	}
}

func TestCommandKeepsOnlyBits1_2_10(t *testing.T) {
	cases := []struct {
		name      string
		reg       uint32
		size      int
		v         uint32
		want      uint16
		mem, mast bool
	}{
		{"all ones", sacc.CfgCommand, 2, 0xFFFF, sacc.CmdWritableBits, true, true},
		{"memory space", sacc.CfgCommand, 2, sacc.CmdMemorySpace, sacc.CmdMemorySpace, true, false},
		{"bus master", sacc.CfgCommand, 2, sacc.CmdBusMaster, sacc.CmdBusMaster, false, true},
		{"INTx disable", sacc.CfgCommand, 2, sacc.CmdINTxDisable, sacc.CmdINTxDisable, false, false},
		{"I/O space (bit 0) is dropped", sacc.CfgCommand, 2, 1 << 0, 0, false, false},
		{"SERR, parity and friends are dropped", sacc.CfgCommand, 2, 0xFFFF &^ sacc.CmdWritableBits, 0, false, false},
		{"byte write, low byte", sacc.CfgCommand, 1, 0xFF, sacc.CmdMemorySpace | sacc.CmdBusMaster, true, true},
		{"byte write, high byte", sacc.CfgCommand + 1, 1, 0xFF, sacc.CmdINTxDisable, false, false},
		{"dword write with STATUS", sacc.CfgCommand, 4, 0xFFFFFFFF, sacc.CmdWritableBits, true, true},
		{"word write at 0x03 reaches COMMAND's low byte", sacc.CfgCommand - 1, 2, 0xFF00, sacc.CmdMemorySpace | sacc.CmdBusMaster, true, true},
		{"dword write at 0x02 reaches COMMAND", sacc.CfgDeviceID, 4, 0x0006FFFF, sacc.CmdMemorySpace | sacc.CmdBusMaster, true, true},
		{"dword write at 0x05 reaches COMMAND's high byte", sacc.CfgCommand + 1, 4, 0xFFFFFFFF, sacc.CmdINTxDisable, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newSACC()
			f.Write(c.reg, c.size, c.v)
			if got := f.Command(); got != c.want {
				t.Errorf("COMMAND = %#04x, want %#04x", got, c.want)
			}
			if got := f.Read(sacc.CfgCommand, 2); got != uint32(c.want) {
				t.Errorf("Read(COMMAND) = %#04x, want %#04x", got, c.want)
			}
			if f.MemoryEnabled() != c.mem || f.BusMaster() != c.mast {
				t.Errorf("MemoryEnabled %v BusMaster %v, want %v %v", f.MemoryEnabled(), f.BusMaster(), c.mem, c.mast)
			}
			if f.Read(sacc.CfgStatus, 2) != 0 || f.Read(sacc.CfgVendorID, 4) != sacc.DeviceID<<16|sacc.VendorID {
				t.Errorf("STATUS or IDs changed: %#x, %#x", f.Read(sacc.CfgStatus, 2), f.Read(sacc.CfgVendorID, 4))
			}
		})
	}
	// Clearing works too.
	f := newSACC()
	f.Write(sacc.CfgCommand, 2, 0xFFFF)
	f.Write(sacc.CfgCommand, 2, sacc.CmdBusMaster)
	if f.Command() != sacc.CmdBusMaster {
		t.Errorf("after clearing, COMMAND = %#x", f.Command())
	}
}

func TestDecodes(t *testing.T) {
	const base = sacc.MMIOWindowBase
	cases := []struct {
		name    string
		command uint32
		bar     int
		barVal  uint32 // written to the BAR (after sizing it)
		sizing  bool   // leave the BAR holding the sizing mask instead
		addr    uint64
		off     uint64
		ok      bool
	}{
		{"BAR0 enabled, first byte", sacc.CmdMemorySpace, 0, base, false, base, 0, true},
		{"BAR0 enabled, last byte", sacc.CmdMemorySpace, 0, base, false, base + sacc.BAR0Size - 1, sacc.BAR0Size - 1, true},
		{"BAR0 enabled, doorbell page", sacc.CmdMemorySpace | sacc.CmdBusMaster, 0, base, false, base + sacc.RegSQTail, sacc.RegSQTail, true},
		{"BAR0 enabled, one past the end", sacc.CmdMemorySpace, 0, base, false, base + sacc.BAR0Size, 0, false},
		{"BAR0 enabled, one below the base", sacc.CmdMemorySpace, 0, base + 0x2000, false, base + 0x1FFF, 0, false},
		{"BAR1 enabled", sacc.CmdMemorySpace, 1, base + 0x10000, false, base + 0x10000 + 0xFFF, 0xFFF, true},
		{"BAR1 enabled, one past the end", sacc.CmdMemorySpace, 1, base + 0x10000, false, base + 0x10000 + sacc.BAR1Size, 0, false},
		{"memory space disabled", 0, 0, base, false, base, 0, false},
		{"bus master only", sacc.CmdBusMaster, 0, base, false, base, 0, false},
		{"INTx disable only", sacc.CmdINTxDisable, 0, base, false, base, 0, false},
		{"BAR left at 0", sacc.CmdMemorySpace, 0, 0, false, 0, 0, false},
		{"BAR left at 0, address inside", sacc.CmdMemorySpace, 0, 0, false, 0x1000, 0, false},
		{"BAR at 0xFEC00000, above the window", sacc.CmdMemorySpace, 0, 0xFEC0_0000, false, 0xFEC0_0000, 0, false},
		{"BAR below the window", sacc.CmdMemorySpace, 0, base - sacc.BAR0Size, false, base - sacc.BAR0Size, 0, false},
		{"BAR0 ending exactly at the window end", sacc.CmdMemorySpace, 0, sacc.MMIOWindowEnd + 1 - sacc.BAR0Size, false, sacc.MMIOWindowEnd, sacc.BAR0Size - 1, true},
		// 0xFEBFF000 is not 8 KiB aligned: BAR0 keeps 0xFEBFE000, which still fits.
		{"BAR0 written unaligned near the window end", sacc.CmdMemorySpace, 0, sacc.MMIOWindowEnd + 1 - sacc.BAR1Size, false, sacc.MMIOWindowEnd, sacc.BAR0Size - 1, true},
		{"BAR1 ending exactly at the window end", sacc.CmdMemorySpace, 1, sacc.MMIOWindowEnd + 1 - sacc.BAR1Size, false, sacc.MMIOWindowEnd, sacc.BAR1Size - 1, true},
		{"BAR still holding the sizing mask", sacc.CmdMemorySpace, 0, 0, true, 0xFFFF_E000, 0, false},
		{"unimplemented BAR2", sacc.CmdMemorySpace, 2, base, false, base, 0, false},
		{"unimplemented BAR5", sacc.CmdMemorySpace, 5, base, false, 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newSACC()
			f.Write(bar(c.bar), 4, 0xFFFFFFFF)
			if !c.sizing {
				f.Write(bar(c.bar), 4, c.barVal)
			}
			f.Write(sacc.CfgCommand, 2, c.command)
			off, ok := f.Decodes(c.bar, c.addr)
			if ok != c.ok || off != c.off {
				t.Errorf("Decodes(BAR%d = %#x, %#x) = %#x, %v; want %#x, %v",
					c.bar, f.BARAddress(c.bar), c.addr, off, ok, c.off, c.ok)
			}
		})
	}
}

func TestInMMIOWindow(t *testing.T) {
	cases := []struct {
		base, size uint64
		want       bool
	}{
		{sacc.MMIOWindowBase, sacc.BAR0Size, true},
		{sacc.MMIOWindowBase - 1, 2, false},
		{sacc.MMIOWindowBase - sacc.PageSize, sacc.PageSize, false},
		{sacc.MMIOWindowEnd + 1 - sacc.PageSize, sacc.PageSize, true},
		{sacc.MMIOWindowEnd + 1 - sacc.PageSize, 2 * sacc.PageSize, false},
		{sacc.MMIOWindowEnd, 1, true},
		{sacc.MMIOWindowEnd + 1, 1, false},
		{0xFEC0_0000, sacc.BAR0Size, false},
		{sacc.IOMMUBase, sacc.IOMMUSize, false},
		{sacc.IntWindowBase, sacc.PageSize, false},
		{0, sacc.BAR0Size, false},
		{sacc.MMIOWindowBase, sacc.MMIOWindowEnd - sacc.MMIOWindowBase + 1, true},
	}
	for _, c := range cases {
		if got := pci.InMMIOWindow(c.base, c.size); got != c.want {
			t.Errorf("InMMIOWindow(%#x, %#x) = %v, want %v", c.base, c.size, got, c.want)
		}
	}
}

type capability struct {
	off uint32
	id  uint8
}

func TestAddCapabilityBuildsAListFrom0x34(t *testing.T) {
	const vendorSpecific = 0x09
	cases := []struct {
		name string
		caps []capability
	}{
		{"one", []capability{{sacc.CfgPCIeCapOffset, sacc.CapIDPCIe}}},
		{"the SACC list", []capability{{sacc.CfgPCIeCapOffset, sacc.CapIDPCIe}, {sacc.CfgMSIXCapOffset, sacc.CapIDMSIX}}},
		{"added out of offset order", []capability{{sacc.CfgMSIXCapOffset, sacc.CapIDMSIX}, {sacc.CfgPCIeCapOffset, sacc.CapIDPCIe}, {0x60, vendorSpecific}}},
		{"near the end of the legacy space", []capability{{0x40, sacc.CapIDPCIe}, {0xF0, vendorSpecific}, {0xC0, sacc.CapIDMSIX}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newSACC()
			for _, cp := range c.caps {
				f.AddCapability(cp.off, cp.id)
			}
			if f.Read(sacc.CfgStatus, 2)&sacc.StatusCapList == 0 {
				t.Error("STATUS bit 4 (capabilities list) clear")
			}
			// Walk by hand, as software does with config reads.
			p := f.Read(sacc.CfgCapPtr, 1)
			var walked []capability
			for p != 0 && len(walked) <= len(c.caps) {
				walked = append(walked, capability{p, uint8(f.Read(p, 1))})
				p = f.Read(p+sacc.CapNextOffset, 1)
			}
			if !slices.Equal(walked, c.caps) {
				t.Errorf("list from 0x34: %v, want %v", walked, c.caps)
			}
			var want [][2]uint32
			for _, cp := range c.caps {
				want = append(want, [2]uint32{cp.off, uint32(cp.id)})
				if got := f.FindCapability(cp.id); got != firstWithID(c.caps, cp.id) {
					t.Errorf("FindCapability(%#x) = %#x, want %#x", cp.id, got, firstWithID(c.caps, cp.id))
				}
			}
			if got := f.Capabilities(); !slices.Equal(got, want) {
				t.Errorf("Capabilities() = %v, want %v", got, want)
			}
			if got := f.FindCapability(0x05); got != 0 {
				t.Errorf("FindCapability(MSI, absent) = %#x, want 0", got)
			}
		})
	}
}

func firstWithID(caps []capability, id uint8) uint32 {
	for _, c := range caps {
		if c.id == id {
			return c.off
		}
	}
	return 0
}

func TestNoCapabilities(t *testing.T) {
	f := newSACC()
	if f.Read(sacc.CfgStatus, 2)&sacc.StatusCapList != 0 {
		t.Error("STATUS bit 4 set without capabilities")
	}
	if caps := f.Capabilities(); caps != nil {
		t.Errorf("Capabilities() = %v, want nil", caps)
	}
	if got := f.FindCapability(sacc.CapIDPCIe); got != 0 {
		t.Errorf("FindCapability = %#x, want 0", got)
	}
}

func TestFindCapabilityReturnsTheFirstOfRepeatedIDs(t *testing.T) {
	f := newSACC()
	f.AddCapability(0x40, 0x09)
	f.AddCapability(0x50, sacc.CapIDMSIX)
	f.AddCapability(0x60, 0x09)
	if got := f.FindCapability(0x09); got != 0x40 {
		t.Errorf("FindCapability = %#x, want 0x40", got)
	}
}

func TestFindCapabilityNeedsTheStatusBit(t *testing.T) {
	// Software must check STATUS bit 4 before trusting the pointer at 0x34.
	f := newSACC()
	f.AddCapability(sacc.CfgPCIeCapOffset, sacc.CapIDPCIe)
	f.Set16(sacc.CfgStatus, 0)
	if got := f.FindCapability(sacc.CapIDPCIe); got != 0 {
		t.Errorf("FindCapability with STATUS bit 4 clear = %#x, want 0", got)
	}
	if got := f.Capabilities(); got != nil {
		t.Errorf("Capabilities with STATUS bit 4 clear = %v, want nil", got)
	}
}

func TestCapabilityWalkStopsOnALoop(t *testing.T) {
	f := newSACC()
	f.AddCapability(0x40, sacc.CapIDPCIe)
	f.AddCapability(0x80, sacc.CapIDMSIX)
	f.Set8(0x80+sacc.CapNextOffset, 0x40) // a broken list that loops
	if got := f.FindCapability(0x05); got != 0 {
		t.Errorf("FindCapability on a loop = %#x, want 0", got)
	}
	if got := len(f.Capabilities()); got == 0 || got > 48 {
		t.Errorf("Capabilities on a loop returned %d entries", got)
	}
}

func TestCapabilityPointerIgnoresLowBits(t *testing.T) {
	// Bits 1:0 of capability pointers are reserved; a walker masks them.
	f := newSACC()
	f.AddCapability(0x40, sacc.CapIDPCIe)
	f.AddCapability(0x80, sacc.CapIDMSIX)
	f.Set8(sacc.CfgCapPtr, 0x43)
	f.Set8(0x40+sacc.CapNextOffset, 0x82)
	if got := f.FindCapability(sacc.CapIDMSIX); got != 0x80 {
		t.Errorf("FindCapability = %#x, want 0x80", got)
	}
}

func TestReadPastTheEndGivesFFBytes(t *testing.T) {
	f := newSACC()
	f.Set32(sacc.ConfigSpaceSize-4, 0x44332211)
	cases := []struct {
		reg  uint32
		size int
		want uint32
	}{
		{sacc.ConfigSpaceSize - 4, 4, 0x44332211},
		{sacc.ConfigSpaceSize - 1, 1, 0x44},
		{sacc.ConfigSpaceSize - 3, 4, 0xFF443322},
		{sacc.ConfigSpaceSize - 2, 4, 0xFFFF4433},
		{sacc.ConfigSpaceSize - 1, 4, 0xFFFFFF44},
		{sacc.ConfigSpaceSize - 1, 2, 0xFF44},
		{sacc.ConfigSpaceSize, 1, 0xFF},
		{sacc.ConfigSpaceSize, 2, 0xFFFF},
		{sacc.ConfigSpaceSize, 4, 0xFFFFFFFF},
		{0x10000, 4, 0xFFFFFFFF},
	}
	for _, c := range cases {
		if got := f.Read(c.reg, c.size); got != c.want {
			t.Errorf("Read(%#x, %d) = %#x, want %#x", c.reg, c.size, got, c.want)
		}
	}
	// Writes there are dropped without harm.
	f.Write(sacc.ConfigSpaceSize-2, 4, 0)
	f.Write(sacc.ConfigSpaceSize, 4, 0)
	if got := f.Read(sacc.ConfigSpaceSize-4, 4); got != 0x44332211 {
		t.Errorf("last dword changed to %#x", got)
	}
}

func TestByteAndWordWritesAtOddOffsets(t *testing.T) {
	cases := []struct {
		name  string
		reg   uint32
		size  int
		v     uint32
		check uint32 // dword-aligned register read back afterwards
		want  uint32
	}{
		{"byte into BAR0 bits 15:8", sacc.CfgBAR0 + 1, 1, 0xFF, sacc.CfgBAR0, 0x0000E000},
		{"byte into BAR0 bits 31:24", sacc.CfgBAR0 + 3, 1, 0xC0, sacc.CfgBAR0, 0xC0000000},
		{"word into BAR0 bits 23:8", sacc.CfgBAR0 + 1, 2, 0xFFFF, sacc.CfgBAR0, 0x00FFE000},
		{"word across BAR0 and BAR1: BAR0 byte 3", sacc.CfgBAR0 + 3, 2, 0xFFFF, sacc.CfgBAR0, 0xFF000000},
		{"word across BAR0 and BAR1: BAR1 byte 0", sacc.CfgBAR0 + 3, 2, 0xFFFF, sacc.CfgBAR1, 0},
		{"word into BAR1 bits 15:8", sacc.CfgBAR1 + 1, 2, 0x1234, sacc.CfgBAR1, 0x00123000},
		{"dword at 0x13 spans BAR0 and BAR1", sacc.CfgBAR0 + 3, 4, 0xFFFFFFFF, sacc.CfgBAR1, 0x00FFF000},
		{"word at 0x0D: latency timer only", sacc.CfgLatencyTimer, 2, 0xFFFF, sacc.CfgCacheLineSize, uint32(sacc.HeaderType)<<16 | 0xFF00},
		{"word at 0x0B: cache line size only", sacc.CfgClassCode + 2, 2, 0x4012, sacc.CfgCacheLineSize, uint32(sacc.HeaderType)<<16 | 0x40},
		{"byte at 0x0B: base class read-only", sacc.CfgClassCode + 2, 1, 0x00, sacc.CfgRevision, sacc.ClassCode<<8 | sacc.Revision},
		{"word at 0x3B: interrupt line only", sacc.CfgInterruptLine - 1, 2, 0x0BFF, sacc.CfgInterruptLine, uint32(sacc.InterruptPin)<<8 | 0x0B},
		{"word at 0x3D: pin and min grant read-only", sacc.CfgInterruptPin, 2, 0xFFFF, sacc.CfgInterruptLine, uint32(sacc.InterruptPin) << 8},
		{"dword at 0x3C: interrupt line only", sacc.CfgInterruptLine, 4, 0xFFFFFFFF, sacc.CfgInterruptLine, uint32(sacc.InterruptPin)<<8 | 0xFF},
		{"word at 0x07: STATUS high and revision", sacc.CfgStatus + 1, 2, 0xFFFF, sacc.CfgStatus - 2, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newSACC()
			f.Write(c.reg, c.size, c.v)
			if got := f.Read(c.check, 4); got != c.want {
				t.Errorf("after Write(%#x, %d, %#x), Read(%#x, 4) = %#08x, want %#08x", c.reg, c.size, c.v, c.check, got, c.want)
			}
		})
	}
}

func TestReadWidthsAgree(t *testing.T) {
	// A dword, its two words and its four bytes are the same bytes, little-endian.
	f := newSACC()
	f.AddCapability(sacc.CfgPCIeCapOffset, sacc.CapIDPCIe)
	f.Write(sacc.CfgBAR0, 4, 0xC0002000)
	for reg := uint32(0); reg < sacc.CfgHeaderEnd+8; reg += 4 {
		d := f.Read(reg, 4)
		w := f.Read(reg, 2) | f.Read(reg+2, 2)<<16
		b := f.Read(reg, 1) | f.Read(reg+1, 1)<<8 | f.Read(reg+2, 1)<<16 | f.Read(reg+3, 1)<<24
		if d != w || d != b || d != f.Get32(reg) {
			t.Errorf("%#x: dword %#x, words %#x, bytes %#x, Get32 %#x", reg, d, w, b, f.Get32(reg))
		}
	}
}
