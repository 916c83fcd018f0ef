package driver_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/host/hosttest"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/trace"
)

var errInjected = errors.New("injected")

// holdings is what a driver can hold of the kernel and the device: after a
// failed probe or a remove, all of it must be as it was before the probe.
type holdings struct {
	enabled, busMaster bool
	command            uint16 // COMMAND's memory-space and bus-master bits
	regions            [sacc.NumBARs]string
	iomaps             int
	mem                uint64 // bytes allocated (exact without an IOMMU)
	iommuPages         int    // IOVA pages mapped (behind an IOMMU)
	handlers           []string
	msix               bool // MSI-X enabled
	vectors            bool // an MSI-X entry allocated
	chrdev             bool // /dev/sacc0 opens
	ctrl               uint32
	bound              bool
}

func holdingsOf(t *testing.T, h *host.Host) holdings {
	t.Helper()
	pd := h.K.Devices()[0]
	hd := holdings{
		enabled: pd.IsEnabled(), busMaster: pd.IsBusMaster(),
		command:    pd.ReadConfig16(sacc.CfgCommand) & (sacc.CmdMemorySpace | sacc.CmdBusMaster),
		iomaps:     pd.IOMaps(),
		mem:        h.K.MemInUse(),
		iommuPages: h.K.IOMMUMappings(),
		msix:       pd.ReadConfig16(sacc.CfgMSIXCapOffset+sacc.CapMSIXControlOff)&sacc.MSIXCtrlEnable != 0,
		ctrl:       h.M.Device().State().Ctrl,
		bound:      pd.Driver != nil || pd.DriverData != nil,
	}
	for i := range hd.regions {
		hd.regions[i] = pd.RegionOwner(i)
	}
	for v := range 256 {
		if _, name := h.K.IRQCount(uint8(v)); name != "" {
			hd.handlers = append(hd.handlers, name)
		}
	}
	_, err := pd.IRQVector(0)
	hd.vectors = err == nil
	p := h.K.NewProcess("probe-check")
	if fd, err := p.Open(driver.DevPath); err == nil {
		hd.chrdev = true
		p.Close(fd)
	} else if !errors.Is(err, kernel.ENOENT) {
		t.Fatalf("open %s: %v", driver.DevPath, err)
	}
	return hd
}

// compare reports every way after differs from before. Behind an IOMMU the
// kernel keeps I/O page tables it once allocated, so there memory is judged by
// the mappings.
func (before holdings) compare(t *testing.T, what string, after holdings, iommu bool) {
	t.Helper()
	check := func(name string, ok bool, b, a any) {
		t.Helper()
		if !ok {
			t.Errorf("%s: %s is %v, was %v before the probe", what, name, a, b)
		}
	}
	check("pci_is_enabled", before.enabled == after.enabled, before.enabled, after.enabled)
	check("is_busmaster", before.busMaster == after.busMaster, before.busMaster, after.busMaster)
	check("COMMAND", before.command == after.command, before.command, after.command)
	check("the claimed regions", before.regions == after.regions, before.regions, after.regions)
	check("the iomaps", before.iomaps == after.iomaps, before.iomaps, after.iomaps)
	if iommu {
		check("the IOVA pages mapped", before.iommuPages == after.iommuPages, before.iommuPages, after.iommuPages)
	} else {
		check("the memory in use", before.mem == after.mem, before.mem, after.mem)
	}
	check("the IRQ handlers", strings.Join(before.handlers, ",") == strings.Join(after.handlers, ","), before.handlers, after.handlers)
	check("MSI-X enable", before.msix == after.msix, before.msix, after.msix)
	check("an allocated MSI-X vector", before.vectors == after.vectors, before.vectors, after.vectors)
	check("/dev/sacc0", before.chrdev == after.chrdev, before.chrdev, after.chrdev)
	check("CTRL", before.ctrl == after.ctrl, before.ctrl, after.ctrl)
	check("the binding", before.bound == after.bound, before.bound, after.bound)
}

// TestFailedProbeGivesEverythingBack makes each step of the probe fail in turn,
// by fault injection or by a machine on which that step really fails, and checks
// that the probe released everything it had acquired before it, and nothing
// else; then that a second probe, with nothing failing, binds and works.
func TestFailedProbeGivesEverythingBack(t *testing.T) {
	type failure struct {
		name  string
		cfg   driver.Config
		quirk quirk.Quirk
		// arm makes the step fail; it returns what the probe's error must say.
		arm func(t *testing.T, h *host.Host) string
		// disarm undoes what arm did outside the kernel's fault injection.
		disarm func(h *host.Host)
	}
	inject := func(fn string, skip int) func(*testing.T, *host.Host) string {
		return func(t *testing.T, h *host.Host) string {
			if err := h.K.InjectFault(fn, skip, errInjected); err != nil {
				t.Fatal(err)
			}
			return fn
		}
	}
	for _, f := range []failure{
		{name: "pci_enable_device", arm: inject("pci_enable_device", 0)},
		{name: "pci_request_regions", arm: inject("pci_request_regions", 0)},
		{name: "pci_iomap", arm: inject("pci_iomap", 0)},
		{name: "dma_set_mask_and_coherent", arm: inject("dma_set_mask_and_coherent", 0)},
		{name: "dma_alloc_coherent of the SQ", arm: inject("dma_alloc_coherent", 0)},
		{name: "dma_alloc_coherent of the CQ", arm: inject("dma_alloc_coherent", 1)},
		{name: "pci_alloc_irq_vectors", arm: inject("pci_alloc_irq_vectors", 0)},
		{name: "request_irq of the completion vector", arm: inject("request_irq", 0)},
		{name: "request_irq of the error vector", arm: inject("request_irq", 1)},
		{name: "regions claimed by another driver", arm: func(t *testing.T, h *host.Host) string {
			if err := h.K.Devices()[0].RequestRegions("other"); err != nil {
				t.Fatal(err)
			}
			return "EBUSY"
		}, disarm: func(h *host.Host) { h.K.Devices()[0].ReleaseRegions() }},
		{name: "BAR0 does not decode", quirk: quirk.SkipMemoryEnable, arm: func(*testing.T, *host.Host) string { return "bad MAGIC" }},
		{name: "the device refuses ENABLE", cfg: driver.Config{RingSize: 3}, arm: func(*testing.T, *host.Host) string {
			return "enable refused: ERR_CODE 0x6"
		}},
	} {
		for _, iommu := range []bool{false, true} {
			name := f.name
			if iommu {
				name += ", IOMMU"
			}
			t.Run(name, func(t *testing.T) {
				cfg := host.Config{NoDriver: true, Kernel: kernel.Config{IOMMU: iommu}}
				if f.quirk != 0 {
					cfg.Kernel.Quirks = quirk.Set(0).With(f.quirk)
				}
				h := hosttest.Boot(t, cfg)
				want := f.arm(t, h)
				before := holdingsOf(t, h)
				d, err := driver.Register(h.K, f.cfg)
				if err == nil || d != nil {
					t.Fatalf("the probe succeeded: %v, %v", d, err)
				}
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("probe error %q does not say %q", err, want)
				}
				if log := hosttest.Dmesg(t, h.K); !strings.Contains(log, "sacc 0000:00:03.0: probe failed: ") {
					t.Errorf("dmesg lacks the failure:\n%s", log)
				}
				before.compare(t, "after the failed probe", holdingsOf(t, h), iommu)
				if f.quirk != 0 || f.cfg.RingSize != 0 {
					return // the machine stays broken
				}
				if f.disarm != nil {
					f.disarm(h)
				}
				d, err = driver.Register(h.K, driver.Config{})
				if err != nil {
					t.Fatalf("the second probe: %v", err)
				}
				if err := d.Dev.Do(&driver.Request{Opcode: sacc.OpNOP}); err != nil {
					t.Fatalf("a NOP after the second probe: %v", err)
				}
			})
		}
	}
}

// TestRemoveGivesEverythingBack: after remove the kernel and the device are as
// they were before the probe, and the device was stopped before bus mastering
// went away.
func TestRemoveGivesEverythingBack(t *testing.T) {
	for _, iommu := range []bool{false, true} {
		for _, irq := range []bool{false, true} {
			h := hosttest.Boot(t, host.Config{NoDriver: true, Kernel: kernel.Config{IOMMU: iommu}})
			before := holdingsOf(t, h)
			d, err := driver.Register(h.K, driver.Config{Interrupts: irq})
			if err != nil {
				t.Fatal(err)
			}
			pd := h.K.Devices()[0]
			if pd.RegionOwner(0) != driver.Name || pd.IOMaps() != 1 || !pd.IsBusMaster() || pd.DMAMask() != kernel.DMABitMask(64) {
				t.Fatalf("iommu=%v irq=%v: a bound device: BAR0 claimed by %q, %d iomaps, bus master %v, DMA mask %#x",
					iommu, irq, pd.RegionOwner(0), pd.IOMaps(), pd.IsBusMaster(), pd.DMAMask())
			}
			if err := d.Dev.Do(&driver.Request{Opcode: sacc.OpNOP, IRQ: irq}); err != nil {
				t.Fatal(err)
			}
			ev := record(h, trace.RegWrite, trace.ConfigWrite)
			d.Unregister()
			before.compare(t, "after remove", holdingsOf(t, h), iommu)
			stopped, masterOff := -1, -1
			for i, e := range ev.evs {
				switch {
				case e.Kind == trace.RegWrite && e.Args[0] == sacc.RegCTRL && e.Args[2] == 0 && stopped < 0:
					stopped = i
				case e.Kind == trace.ConfigWrite && e.Args[1] == sacc.CfgCommand && e.Args[3]&sacc.CmdBusMaster == 0 && masterOff < 0:
					masterOff = i
				}
			}
			if stopped < 0 || masterOff < 0 || stopped > masterOff {
				t.Errorf("iommu=%v irq=%v: CTRL cleared at event %d, bus mastering off at %d: the device must stop first", iommu, irq, stopped, masterOff)
			}
		}
	}
}

// TestRegionsHeldByTheDriver: while the driver is bound no one else can claim
// the device's registers.
func TestRegionsHeldByTheDriver(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	pd := h.K.Devices()[0]
	if err := pd.RequestRegions("intruder"); !errors.Is(err, kernel.EBUSY) {
		t.Fatalf("a second claim while the driver is bound: %v, want EBUSY", err)
	}
	if got := pd.RegionOwner(0); got != driver.Name {
		t.Fatalf("BAR0 claimed by %q, want %q", got, driver.Name)
	}
}
