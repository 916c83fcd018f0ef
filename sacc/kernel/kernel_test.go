package kernel_test

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/host/hosttest"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
)

var dmesgLine = regexp.MustCompile(`^\[ *(\d+)\.(\d{6})\] (.+)$`)

func TestDmesgLinesAreTimestamped(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  host.Config
		want []string
	}{
		{"no iommu", host.Config{NoDriver: true}, []string{
			"[    0.000000] Linux version 6.12.0-saccbook (saccbook) #1 SMP",
			"Memory: 131072K available, CPU model x86",
			"pci 0000:00:03.0: [1b36:1092] type 00 class 0x120000",
			"pci 0000:00:03.0: BAR 0: assigned [mem 0xc0000000-0xc0001fff]",
			"pci 0000:00:03.0: BAR 1: assigned [mem 0xc0002000-0xc0002fff]",
		}},
		{"iommu strict", host.Config{NoDriver: true, Kernel: kernel.Config{IOMMU: true}}, []string{"DMAR: IOMMU enabled, strict invalidation"}},
		{"iommu lazy", host.Config{NoDriver: true, Kernel: kernel.Config{IOMMU: true, LazyUnmap: true}}, []string{"DMAR: IOMMU enabled, lazy invalidation"}},
		{"arm64 non-coherent", host.Config{NoDriver: true, CPU: cpu.Config{Arch: cpu.ARM64, NonCoherent: true}, Machine: machine.Config{RAMSize: 64 << 20}},
			[]string{"Memory: 65536K available, CPU model arm64, non-coherent DMA"}},
		{"with driver", host.Config{}, []string{"sacc 0000:00:03.0: enabled 2 MSI-X vectors (0x30-0x31)", "sacc 0000:00:03.0: SACC v1 ready"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hosttest.Boot(t, tc.cfg)
			out := hosttest.Dmesg(t, h.K)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("dmesg lacks %q:\n%s", w, out)
				}
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != len(h.K.Log()) {
				t.Fatalf("%d dmesg lines for %d log entries", len(lines), len(h.K.Log()))
			}
			var last uint64
			for i, l := range lines {
				m := dmesgLine.FindStringSubmatch(l)
				if m == nil {
					t.Fatalf("line %d %q is not \"[    s.micros] text\"", i, l)
				}
				s, _ := strconv.ParseUint(m[1], 10, 64)
				us, _ := strconv.ParseUint(m[2], 10, 64)
				at := s*1_000_000 + us
				if at < last {
					t.Fatalf("line %d %q goes back in time", i, l)
				}
				last = at
				e := h.K.Log()[i]
				if uint64(e.Time)/1000 != at || e.Text != m[3] {
					t.Fatalf("line %d %q does not print log entry %+v", i, l, e)
				}
			}
			if !strings.HasPrefix(lines[0], "[    0.000000] ") {
				t.Errorf("first line %q is not at time 0", lines[0])
			}
		})
	}
}

func TestDmesgPrintsSecondsAndMicroseconds(t *testing.T) {
	h := hosttest.Boot(t, host.Config{NoDriver: true})
	h.CPU.Delay(12_345_678_901 - h.M.Now()) // 12.345678901 s
	h.K.Printk("late %d", 42)
	lines := strings.Split(strings.TrimSuffix(hosttest.Dmesg(t, h.K), "\n"), "\n")
	if got, want := lines[len(lines)-1], "[   12.345678] late 42"; got != want {
		t.Fatalf("last line %q, want %q", got, want)
	}
}

func TestEnumerationFindsTheSACCFunction(t *testing.T) {
	h, d := bare(t, host.Config{})
	if d.Name() != "0000:00:03.0" || d.Bus != 0 || d.Dev != 3 || d.Fn != 0 {
		t.Errorf("device %s (%d:%d.%d), want 0000:00:03.0", d.Name(), d.Bus, d.Dev, d.Fn)
	}
	if d.Vendor != sacc.VendorID || d.Device != sacc.DeviceID || d.Class != 0x120000 || d.Revision != 1 {
		t.Errorf("identity %04x:%04x class %#x rev %d", d.Vendor, d.Device, d.Class, d.Revision)
	}
	if d.Driver != nil || d.Kernel() != h.K {
		t.Errorf("driver %v kernel %p", d.Driver, d.Kernel())
	}
}

func TestEnumerationAssignsNaturallyAlignedBARs(t *testing.T) {
	_, d := bare(t, host.Config{})
	want := [sacc.NumBARs]kernel.Resource{0: {Start: 0xC000_0000, Size: 0x2000}, 1: {Start: 0xC000_2000, Size: 0x1000}}
	if d.BAR != want {
		t.Fatalf("BARs %+v, want %+v", d.BAR, want)
	}
	for i, r := range d.BAR {
		reg := d.ReadConfig32(uint32(sacc.CfgBAR0 + 4*i))
		if r.Size == 0 {
			if reg != 0 {
				t.Errorf("unimplemented BAR%d reads %#x", i, reg)
			}
			continue
		}
		if r.Start%r.Size != 0 {
			t.Errorf("BAR%d at %#x is not aligned to its size %#x", i, r.Start, r.Size)
		}
		if r.Start < sacc.MMIOWindowBase || r.Start+r.Size-1 > sacc.MMIOWindowEnd {
			t.Errorf("BAR%d [%#x, +%#x) is outside the MMIO window", i, r.Start, r.Size)
		}
		if uint64(reg&^0xF) != r.Start || reg&0xF != 0 {
			t.Errorf("BAR%d register reads %#x, want the address %#x (32-bit memory)", i, reg, r.Start)
		}
	}
	for i, r := range d.BAR[:2] {
		for j, o := range d.BAR[i+1 : 2] {
			if r.Start < o.Start+o.Size && o.Start < r.Start+r.Size {
				t.Errorf("BAR%d and BAR%d overlap", i, i+1+j)
			}
		}
	}
}

func TestFirmwareLeavesCommandZero(t *testing.T) {
	h, d := bare(t, host.Config{})
	if cmd := d.ReadConfig16(sacc.CfgCommand); cmd != 0 {
		t.Fatalf("COMMAND %#x after boot, want 0", cmd)
	}
	// So the BARs do not decode yet: the register file reads all ones.
	if v := h.CPU.Readl(d.BAR[0].Start + sacc.RegMAGIC); v != 0xFFFF_FFFF {
		t.Fatalf("MAGIC reads %#x before pci_enable_device, want all ones", v)
	}
}

func TestBARSizingNoMaskLeavesBAR0Unassigned(t *testing.T) {
	q := quirk.Set(0).With(quirk.BARSizingNoMask)
	for _, tc := range []struct {
		name string
		cfg  host.Config
	}{
		{"kernel quirk", host.Config{Kernel: kernel.Config{Quirks: q}}},
		{"machine quirk", host.Config{Machine: machine.Config{Quirks: q}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, d := bare(t, tc.cfg)
			// The kernel believes in an address the BAR does not hold.
			if d.BAR[0].Start != 0xC000_0000 || d.BAR[0].Size != 0x2000 {
				t.Errorf("kernel's BAR0 %+v", d.BAR[0])
			}
			if reg := d.ReadConfig32(sacc.CfgBAR0); reg != 0xFFFF_E000 {
				t.Errorf("BAR0 register %#x, want the sizing pattern 0xffffe000", reg)
			}
			if err := d.EnableDevice(); err != nil {
				t.Fatal(err)
			}
			regs, err := d.IOMap(0)
			if err != nil {
				t.Fatal(err)
			}
			for _, off := range []uint32{sacc.RegMAGIC, sacc.RegVERSION, sacc.RegSTATUS} {
				if v := regs.Readl(off); v != 0xFFFF_FFFF {
					t.Errorf("register %#x reads %#x, want all ones", off, v)
				}
			}
		})
	}
	t.Run("the driver's probe fails", func(t *testing.T) {
		h, err := host.Boot(host.Config{Kernel: kernel.Config{Quirks: q}})
		if err == nil || !strings.Contains(err.Error(), "bad MAGIC 0xffffffff") {
			t.Fatalf("boot with the quirk: %v", err)
		}
		if h == nil || !strings.Contains(hosttest.Dmesg(t, h.K), "sacc 0000:00:03.0: probe failed") {
			t.Fatal("dmesg does not report the failed probe")
		}
	})
}

func TestRegisterDriverMatchesAndProbes(t *testing.T) {
	probeErr := errors.New("probe says no")
	for _, tc := range []struct {
		name      string
		ids       []kernel.DeviceID
		err       error
		probed    bool
		bound     bool
		wantLog   string
		wantError bool
	}{
		{"matching id", []kernel.DeviceID{{Vendor: sacc.VendorID, Device: sacc.DeviceID}}, nil, true, true, "", false},
		{"second id matches", []kernel.DeviceID{{Vendor: 0x8086, Device: 0x1234}, {Vendor: sacc.VendorID, Device: sacc.DeviceID}}, nil, true, true, "", false},
		{"vendor only", []kernel.DeviceID{{Vendor: sacc.VendorID, Device: 0x0001}}, nil, false, false, "", false},
		{"device only", []kernel.DeviceID{{Vendor: 0x1AF4, Device: sacc.DeviceID}}, nil, false, false, "", false},
		{"empty table", nil, nil, false, false, "", false},
		{"probe error", []kernel.DeviceID{{Vendor: sacc.VendorID, Device: sacc.DeviceID}}, probeErr, true, false,
			"testdrv 0000:00:03.0: probe failed: probe says no", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, d := bare(t, host.Config{})
			var probed []*kernel.PCIDev
			var driverDuringProbe *kernel.PCIDriver
			drv := &kernel.PCIDriver{Name: "testdrv", IDs: tc.ids, Probe: func(pd *kernel.PCIDev) error {
				probed = append(probed, pd)
				driverDuringProbe = pd.Driver
				return tc.err
			}}
			err := h.K.RegisterDriver(drv)
			if (err != nil) != tc.wantError {
				t.Fatalf("RegisterDriver: %v", err)
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("error %v does not wrap the probe's error", err)
			}
			if got := len(probed) == 1 && probed[0] == d; got != tc.probed || len(probed) > 1 {
				t.Fatalf("probed %v, want probed=%v", probed, tc.probed)
			}
			if tc.probed && driverDuringProbe != drv {
				t.Errorf("Driver during probe is %v, want the driver being probed", driverDuringProbe)
			}
			if (d.Driver == drv) != tc.bound || (!tc.bound && d.Driver != nil) {
				t.Fatalf("device bound to %v, want bound=%v", d.Driver, tc.bound)
			}
			if tc.wantLog != "" && !strings.Contains(hosttest.Dmesg(t, h.K), tc.wantLog) {
				t.Fatalf("dmesg lacks %q:\n%s", tc.wantLog, hosttest.Dmesg(t, h.K))
			}
		})
	}
}

func TestRegisterDriverSkipsBoundDevices(t *testing.T) {
	h, d := bare(t, host.Config{})
	ids := []kernel.DeviceID{{Vendor: sacc.VendorID, Device: sacc.DeviceID}}
	first := &kernel.PCIDriver{Name: "first", IDs: ids, Probe: func(*kernel.PCIDev) error { return nil }}
	second := &kernel.PCIDriver{Name: "second", IDs: ids, Probe: func(*kernel.PCIDev) error {
		t.Fatal("a bound device was offered to a second driver")
		return nil
	}}
	if err := h.K.RegisterDriver(first); err != nil {
		t.Fatal(err)
	}
	if err := h.K.RegisterDriver(second); err != nil {
		t.Fatal(err)
	}
	if d.Driver != first {
		t.Fatalf("bound to %v", d.Driver)
	}
	d.Info("hello %d", 7)
	if !strings.Contains(hosttest.Dmesg(t, h.K), "first 0000:00:03.0: hello 7") {
		t.Fatalf("dev_info is not prefixed with the driver name:\n%s", hosttest.Dmesg(t, h.K))
	}
}

func TestUnregisterDriverCallsRemove(t *testing.T) {
	for _, withRemove := range []bool{true, false} {
		h, d := bare(t, host.Config{})
		var removed []*kernel.PCIDev
		drv := &kernel.PCIDriver{Name: "t", IDs: []kernel.DeviceID{{Vendor: sacc.VendorID, Device: sacc.DeviceID}},
			Probe: func(*kernel.PCIDev) error { return nil }}
		if withRemove {
			drv.Remove = func(pd *kernel.PCIDev) {
				if pd.Driver != drv {
					t.Error("Driver cleared before Remove ran")
				}
				removed = append(removed, pd)
			}
		}
		other := &kernel.PCIDriver{Name: "other", Remove: func(*kernel.PCIDev) { t.Error("Remove of an unbound driver ran") }}
		if err := h.K.RegisterDriver(drv); err != nil {
			t.Fatal(err)
		}
		h.K.UnregisterDriver(other)
		if d.Driver != drv {
			t.Fatal("unregistering another driver unbound the device")
		}
		h.K.UnregisterDriver(drv)
		if withRemove && (len(removed) != 1 || removed[0] != d) {
			t.Fatalf("Remove ran for %v", removed)
		}
		if d.Driver != nil {
			t.Fatalf("still bound to %v", d.Driver)
		}
		h.K.UnregisterDriver(drv) // a second time: nothing bound, nothing called
		if len(removed) > 1 {
			t.Fatal("Remove ran twice")
		}
	}
}

func TestUnregisterTheSACCDriverStopsTheDevice(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	pd := h.Dev.PCI()
	h.Drv.Unregister()
	if pd.Driver != nil {
		t.Fatal("device still bound")
	}
	if st := h.M.Device().State(); st.Ctrl != 0 || st.MSIXControl&sacc.MSIXCtrlEnable != 0 {
		t.Fatalf("after remove: CTRL %#x MSI-X control %#x", st.Ctrl, st.MSIXControl)
	}
	if cmd := pd.ReadConfig16(sacc.CfgCommand); cmd&(sacc.CmdMemorySpace|sacc.CmdBusMaster) != 0 {
		t.Fatalf("COMMAND %#x after remove", cmd)
	}
	if !strings.Contains(hosttest.Dmesg(t, h.K), "sacc 0000:00:03.0: removed") {
		t.Fatal("no removal in dmesg")
	}
}
