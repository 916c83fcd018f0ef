package kernel_test

import (
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/quirk"
)

func TestEnableDeviceAndSetMasterSetCommandBits(t *testing.T) {
	for _, tc := range []struct {
		name       string
		quirks     quirk.Set
		wantMemory bool
		wantMaster bool
	}{
		{"as specified", 0, true, true},
		{"skip memory enable", quirk.Set(0).With(quirk.SkipMemoryEnable), false, true},
		{"skip bus master", quirk.Set(0).With(quirk.SkipBusMaster), true, false},
		{"both", quirk.Set(0).With(quirk.SkipMemoryEnable).With(quirk.SkipBusMaster), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, d := bare(t, host.Config{Kernel: kernel.Config{Quirks: tc.quirks}})
			if err := d.EnableDevice(); err != nil {
				t.Fatal(err)
			}
			cmd := d.ReadConfig16(sacc.CfgCommand)
			if got := cmd&sacc.CmdMemorySpace != 0; got != tc.wantMemory {
				t.Errorf("after EnableDevice COMMAND %#x: memory space %v, want %v", cmd, got, tc.wantMemory)
			}
			if cmd&sacc.CmdBusMaster != 0 {
				t.Errorf("EnableDevice set bus master: COMMAND %#x", cmd)
			}
			d.SetMaster()
			cmd = d.ReadConfig16(sacc.CfgCommand)
			if got := cmd&sacc.CmdBusMaster != 0; got != tc.wantMaster {
				t.Errorf("after SetMaster COMMAND %#x: bus master %v, want %v", cmd, got, tc.wantMaster)
			}
			if got := cmd&sacc.CmdMemorySpace != 0; got != tc.wantMemory {
				t.Errorf("SetMaster changed memory space: COMMAND %#x", cmd)
			}
			// Decoding follows the memory-space bit.
			magic := h.CPU.Readl(d.BAR[0].Start + sacc.RegMAGIC)
			if want := map[bool]uint32{true: sacc.MagicValue, false: 0xFFFF_FFFF}[tc.wantMemory]; magic != want {
				t.Errorf("MAGIC reads %#x, want %#x", magic, want)
			}
			d.ClearMaster()
			if cmd := d.ReadConfig16(sacc.CfgCommand); cmd&sacc.CmdBusMaster != 0 || (cmd&sacc.CmdMemorySpace != 0) != tc.wantMemory {
				t.Errorf("after ClearMaster COMMAND %#x", cmd)
			}
			d.SetMaster()
			d.DisableDevice()
			if cmd := d.ReadConfig16(sacc.CfgCommand); cmd&(sacc.CmdMemorySpace|sacc.CmdBusMaster) != 0 {
				t.Errorf("after DisableDevice COMMAND %#x", cmd)
			}
		})
	}
}

func TestEnableDeviceKeepsOtherCommandBits(t *testing.T) {
	_, d := bare(t, host.Config{})
	d.WriteConfig16(sacc.CfgCommand, sacc.CmdINTxDisable)
	if err := d.EnableDevice(); err != nil {
		t.Fatal(err)
	}
	d.SetMaster()
	if cmd, want := d.ReadConfig16(sacc.CfgCommand), uint16(sacc.CmdINTxDisable|sacc.CmdMemorySpace|sacc.CmdBusMaster); cmd != want {
		t.Fatalf("COMMAND %#x, want %#x", cmd, want)
	}
}

func TestFindCapabilityWalksTheList(t *testing.T) {
	_, d := bare(t, host.Config{})
	for _, tc := range []struct {
		id   uint8
		want uint32
	}{
		{sacc.CapIDPCIe, sacc.CfgPCIeCapOffset},
		{sacc.CapIDMSIX, sacc.CfgMSIXCapOffset},
		{0x05, 0}, // MSI: not there
		{0x01, 0}, // power management: not there
		{0x00, 0},
		{0xFF, 0},
	} {
		if got := d.FindCapability(tc.id); got != tc.want {
			t.Errorf("FindCapability(%#x) = %#x, want %#x", tc.id, got, tc.want)
		}
	}
	if d.FindCapability(sacc.CapIDPCIe) != 0x40 || d.FindCapability(sacc.CapIDMSIX) != 0x80 {
		t.Fatal("SACC v1 places the capabilities at 0x40 and 0x80")
	}
}

func TestConfigAccessorsReadTheHeader(t *testing.T) {
	_, d := bare(t, host.Config{})
	for _, tc := range []struct {
		name string
		got  uint32
		want uint32
	}{
		{"vendor/device dword", d.ReadConfig32(sacc.CfgVendorID), uint32(sacc.DeviceID)<<16 | sacc.VendorID},
		{"vendor word", uint32(d.ReadConfig16(sacc.CfgVendorID)), sacc.VendorID},
		{"device word", uint32(d.ReadConfig16(sacc.CfgDeviceID)), sacc.DeviceID},
		{"revision byte", uint32(d.ReadConfig8(sacc.CfgRevision)), 1},
		{"capability pointer", uint32(d.ReadConfig8(sacc.CfgCapPtr)), 0x40},
		{"status has a capability list", uint32(d.ReadConfig16(sacc.CfgStatus) & sacc.StatusCapList), sacc.StatusCapList},
		{"extended space is empty", d.ReadConfig32(sacc.CfgExtendedStart), 0},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %#x, want %#x", tc.name, tc.got, tc.want)
		}
	}
}

func TestIOMap(t *testing.T) {
	h, d := bare(t, host.Config{})
	for bar := range sacc.NumBARs {
		io, err := d.IOMap(bar)
		r := d.BAR[bar]
		if r.Size == 0 {
			if err == nil || !strings.Contains(err.Error(), "not assigned") {
				t.Errorf("IOMap(%d) of an unassigned BAR: %v, %v", bar, io, err)
			}
			continue
		}
		if err != nil || io.Base != r.Start || io.Size != r.Size {
			t.Errorf("IOMap(%d) = %+v, %v; want base %#x size %#x", bar, io, err, r.Start, r.Size)
		}
	}
	if err := d.EnableDevice(); err != nil {
		t.Fatal(err)
	}
	regs, err := d.IOMap(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		off  uint32
		want uint32
	}{
		{sacc.RegMAGIC, sacc.MagicValue},
		{sacc.RegVERSION, sacc.VersionValue},
		{sacc.RegSTATUS, 0},
	} {
		if v := regs.Readl(tc.off); v != tc.want {
			t.Errorf("register %#x reads %#x, want %#x", tc.off, v, tc.want)
		}
	}
	regs.Writel(sacc.RegSCRATCH, 0xC0FFEE)
	if v := regs.Readl(sacc.RegSCRATCH); v != 0xC0FFEE {
		t.Errorf("SCRATCH reads %#x after Writel", v)
	}
	regs.WritelRelaxed(sacc.RegSCRATCH, 0xBEEF)
	if v := h.M.Device().State().Scratch; v != 0xBEEF {
		t.Errorf("SCRATCH %#x after WritelRelaxed", v)
	}
	regs.Writeq(sacc.RegSQBaseLo, 0x1_2345_6000)
	if st := h.M.Device().State(); st.SQBase != 0x1_2345_6000 {
		t.Errorf("SQ_BASE %#x after Writeq", st.SQBase)
	}
}

func TestMovingABARMovesItsDecode(t *testing.T) {
	h, d := bare(t, host.Config{})
	const moved = 0xC010_0000
	d.WriteConfig32(sacc.CfgBAR0, moved)
	if reg := d.ReadConfig32(sacc.CfgBAR0); reg != moved {
		t.Fatalf("BAR0 reads %#x after WriteConfig32", reg)
	}
	if err := d.EnableDevice(); err != nil {
		t.Fatal(err)
	}
	if v := h.CPU.Readl(moved + sacc.RegMAGIC); v != sacc.MagicValue {
		t.Errorf("MAGIC at the new address %#x", v)
	}
	if v := h.CPU.Readl(d.BAR[0].Start + sacc.RegMAGIC); v != 0xFFFF_FFFF {
		t.Errorf("the old address still decodes: %#x", v)
	}
}
