package kernel_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/host/hosttest"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/trace"
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
	if v := h.M.Device().State().Scratch; v == 0xBEEF {
		t.Errorf("SCRATCH %#x at the instant WritelRelaxed is issued: a posted write lands later", v)
	}
	h.K.CPU.Delay(h.M.Cost().MMIOWrite)
	if v := h.M.Device().State().Scratch; v != 0xBEEF {
		t.Errorf("SCRATCH %#x one write latency after WritelRelaxed", v)
	}
	regs.Writeq(sacc.RegSQBaseLo, 0x1_2345_6000)
	h.K.CPU.Delay(h.M.Cost().MMIOWrite)
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

func TestRequestRegionsClaimsEveryAssignedBAR(t *testing.T) {
	h, d := bare(t, host.Config{})
	if err := d.RequestRegions("first"); err != nil {
		t.Fatal(err)
	}
	for i, r := range d.BAR {
		want := map[bool]string{true: "first", false: ""}[r.Size != 0]
		if got := d.RegionOwner(i); got != want {
			t.Errorf("BAR%d (size %#x) claimed by %q, want %q", i, r.Size, got, want)
		}
	}
	// A second claim is refused whoever makes it, and changes nothing.
	for _, name := range []string{"second", "first"} {
		if err := d.RequestRegions(name); !errors.Is(err, kernel.EBUSY) {
			t.Fatalf("RequestRegions(%q) while claimed: %v, want EBUSY", name, err)
		}
		if got := d.RegionOwner(0); got != "first" {
			t.Fatalf("a refused claim changed BAR0's owner to %q", got)
		}
	}
	if log := hosttest.Dmesg(t, h.K); !strings.Contains(log, "BAR 0: can't reserve [mem 0xc0000000-0xc0001fff]: in use by first") {
		t.Errorf("dmesg lacks the refused claim:\n%s", log)
	}
	d.ReleaseRegions()
	for i := range d.BAR {
		if got := d.RegionOwner(i); got != "" {
			t.Errorf("after ReleaseRegions BAR%d is claimed by %q", i, got)
		}
	}
	if err := d.RequestRegions("second"); err != nil {
		t.Fatalf("RequestRegions after ReleaseRegions: %v", err)
	}
	if got := d.RegionOwner(0); got != "second" {
		t.Fatalf("BAR0 claimed by %q, want second", got)
	}
}

func TestIOUnmapEndsTheMapping(t *testing.T) {
	h, d := bare(t, host.Config{})
	if err := d.EnableDevice(); err != nil {
		t.Fatal(err)
	}
	regs, err := d.IOMap(0)
	if err != nil {
		t.Fatal(err)
	}
	other, err := d.IOMap(0)
	if err != nil {
		t.Fatal(err)
	}
	if n := d.IOMaps(); n != 2 {
		t.Fatalf("%d live mappings after two IOMaps", n)
	}
	if v := regs.Readl(sacc.RegMAGIC); v != sacc.MagicValue {
		t.Fatalf("MAGIC %#x through a live mapping", v)
	}
	d.IOUnmap(regs)
	if n := d.IOMaps(); n != 1 {
		t.Fatalf("%d live mappings after one IOUnmap, want 1", n)
	}
	// Every accessor refuses an unmapped BAR, and nothing reaches the device.
	writes := record(t, h, trace.RegWrite)
	for name, access := range map[string]func(){
		"Readl":         func() { regs.Readl(sacc.RegMAGIC) },
		"Readw":         func() { regs.Readw(sacc.RegMAGIC) },
		"Writel":        func() { regs.Writel(sacc.RegSCRATCH, 1) },
		"Writew":        func() { regs.Writew(sacc.RegSCRATCH, 1) },
		"WritelRelaxed": func() { regs.WritelRelaxed(sacc.RegSCRATCH, 1) },
		"Writeq":        func() { regs.Writeq(sacc.RegSQBaseLo, 1) },
	} {
		msg := func() (msg string) {
			defer func() {
				if v := recover(); v != nil {
					msg = fmt.Sprint(v)
				}
			}()
			access()
			return ""
		}()
		if !strings.Contains(msg, "iounmapped") || !strings.Contains(msg, "0xc00000") {
			t.Errorf("%s after IOUnmap: %q, want the kernel stopped at the address", name, msg)
		}
	}
	if len(*writes) != 0 || h.M.Device().State().Scratch != 0 {
		t.Fatalf("writes through an unmapped BAR reached the device: %v", *writes)
	}
	// The other mapping is unaffected; unmapping twice is only a warning.
	if v := other.Readl(sacc.RegMAGIC); v != sacc.MagicValue {
		t.Fatalf("MAGIC %#x through the other mapping", v)
	}
	d.IOUnmap(regs)
	if n := d.IOMaps(); n != 1 {
		t.Fatalf("a second IOUnmap of the same mapping left %d live mappings, want 1", n)
	}
	if log := hosttest.Dmesg(t, h.K); !strings.Contains(log, "pci_iounmap of a mapping that is not live") {
		t.Errorf("dmesg lacks the warning:\n%s", log)
	}
	d.IOUnmap(other)
	if n := d.IOMaps(); n != 0 {
		t.Fatalf("%d live mappings after unmapping both", n)
	}
}

func TestIsEnabledAndIsBusMasterFollowTheCalls(t *testing.T) {
	_, d := bare(t, host.Config{})
	state := func() [2]bool { return [2]bool{d.IsEnabled(), d.IsBusMaster()} }
	for _, step := range []struct {
		name string
		do   func()
		want [2]bool
	}{
		{"at boot", func() {}, [2]bool{false, false}},
		{"EnableDevice", func() {
			if err := d.EnableDevice(); err != nil {
				t.Fatal(err)
			}
		}, [2]bool{true, false}},
		{"SetMaster", d.SetMaster, [2]bool{true, true}},
		{"ClearMaster", d.ClearMaster, [2]bool{true, false}},
		{"SetMaster again", d.SetMaster, [2]bool{true, true}},
		{"DisableDevice", d.DisableDevice, [2]bool{false, false}},
	} {
		step.do()
		if got := state(); got != step.want {
			t.Errorf("after %s: enabled, bus master = %v, want %v", step.name, got, step.want)
		}
	}
}
