package kernel_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/host/hosttest"
	"github.com/saccbook/saccbook/sacc/kernel"
)

var errInjected = errors.New("injected")

func TestInjectFaultRefusesWhatItCannotDo(t *testing.T) {
	h, _ := bare(t, host.Config{})
	for _, tc := range []struct {
		fn   string
		skip int
		err  error
	}{
		{"pci_disable_device", 0, errInjected}, // nothing to unwind if it could fail
		{"kmalloc", 0, errInjected},
		{"dma_alloc_coherent", 0, nil},
		{"dma_alloc_coherent", -1, errInjected},
	} {
		if err := h.K.InjectFault(tc.fn, tc.skip, tc.err); !errors.Is(err, kernel.EINVAL) {
			t.Errorf("InjectFault(%q, %d, %v) = %v, want EINVAL", tc.fn, tc.skip, tc.err, err)
		}
	}
}

func TestInjectFaultFailsTheCallAfterSkip(t *testing.T) {
	h, d := bare(t, host.Config{})
	if err := h.K.InjectFault("dma_alloc_coherent", 2, kernel.ENOMEM); err != nil {
		t.Fatal(err)
	}
	for call, wantFail := range []bool{false, false, true, false, false} {
		before := h.K.MemInUse()
		_, _, err := d.DMAAllocCoherent(pg)
		if failed := err != nil; failed != wantFail {
			t.Fatalf("call %d: %v, want failure %v", call, err, wantFail)
		}
		if wantFail {
			if !errors.Is(err, kernel.ENOMEM) || !strings.Contains(err.Error(), "dma_alloc_coherent") {
				t.Errorf("call %d: %v, want the injected ENOMEM, naming the function", call, err)
			}
			if h.K.MemInUse() != before {
				t.Errorf("the failed call allocated %#x bytes", h.K.MemInUse()-before)
			}
		}
	}
	if log := hosttest.Dmesg(t, h.K); strings.Count(log, "FAULT_INJECTION: forcing a failure in dma_alloc_coherent") != 1 {
		t.Errorf("dmesg should say once that a failure was forced:\n%s", log)
	}
	// Arming again replaces what was armed.
	if err := h.K.InjectFault("dma_alloc_coherent", 5, errInjected); err != nil {
		t.Fatal(err)
	}
	if err := h.K.InjectFault("dma_alloc_coherent", 0, kernel.EIO); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.DMAAllocCoherent(pg); !errors.Is(err, kernel.EIO) {
		t.Fatalf("after re-arming with skip 0: %v, want EIO", err)
	}
	if _, _, err := d.DMAAllocCoherent(pg); err != nil {
		t.Fatalf("the earlier arming survived the new one: %v", err)
	}
}

// TestEveryInjectableFunctionFailsWithoutEffect: an injected failure comes
// before the function has done anything, so a caller has nothing to undo.
func TestEveryInjectableFunctionFailsWithoutEffect(t *testing.T) {
	msixOn := func(d *kernel.PCIDev) bool {
		return d.ReadConfig16(sacc.CfgMSIXCapOffset+sacc.CapMSIXControlOff)&sacc.MSIXCtrlEnable != 0
	}
	for _, tc := range []struct {
		fn        string
		setup     func(t *testing.T, d *kernel.PCIDev)
		call      func(d *kernel.PCIDev) error
		unchanged func(h *host.Host, d *kernel.PCIDev) bool
	}{
		{"pci_enable_device", nil, (*kernel.PCIDev).EnableDevice, func(_ *host.Host, d *kernel.PCIDev) bool {
			return !d.IsEnabled() && d.ReadConfig16(sacc.CfgCommand)&sacc.CmdMemorySpace == 0
		}},
		{"pci_request_regions", nil, func(d *kernel.PCIDev) error { return d.RequestRegions("t") }, func(_ *host.Host, d *kernel.PCIDev) bool {
			return d.RegionOwner(0) == "" && d.RegionOwner(sacc.MSIXTableBAR) == ""
		}},
		{"pci_iomap", nil, func(d *kernel.PCIDev) error { _, err := d.IOMap(0); return err }, func(_ *host.Host, d *kernel.PCIDev) bool {
			return d.IOMaps() == 0
		}},
		{"dma_set_mask_and_coherent", nil, func(d *kernel.PCIDev) error { return d.DMASetMaskAndCoherent(kernel.DMABitMask(64)) },
			func(_ *host.Host, d *kernel.PCIDev) bool { return d.DMAMask() == kernel.DMABitMask(32) }},
		{"dma_alloc_coherent", nil, func(d *kernel.PCIDev) error { _, _, err := d.DMAAllocCoherent(pg); return err }, nil},
		{"pci_alloc_irq_vectors", enable, func(d *kernel.PCIDev) error { _, err := d.AllocIRQVectors(2, 2); return err },
			func(_ *host.Host, d *kernel.PCIDev) bool {
				_, err := d.IRQVector(0)
				return err != nil && !msixOn(d)
			}},
		{"request_irq", func(t *testing.T, d *kernel.PCIDev) {
			enable(t, d)
			if _, err := d.AllocIRQVectors(2, 2); err != nil {
				t.Fatal(err)
			}
		}, func(d *kernel.PCIDev) error {
			return d.RequestIRQ(0, func(uint8, any) kernel.IRQReturn { return kernel.IRQHandled }, "t", nil)
		}, func(h *host.Host, d *kernel.PCIDev) bool {
			v, _ := d.IRQVector(0)
			_, name := h.K.IRQCount(v)
			return name == "" && h.M.Device().State().MSIX[0].Masked()
		}},
	} {
		t.Run(tc.fn, func(t *testing.T) {
			h, d := bare(t, host.Config{})
			if tc.setup != nil {
				tc.setup(t, d)
			}
			if err := h.K.InjectFault(tc.fn, 0, errInjected); err != nil {
				t.Fatal(err)
			}
			mem := h.K.MemInUse()
			if err := tc.call(d); !errors.Is(err, errInjected) {
				t.Fatalf("%s: %v, want the injected error", tc.fn, err)
			}
			if h.K.MemInUse() != mem {
				t.Errorf("the failed %s allocated %#x bytes", tc.fn, h.K.MemInUse()-mem)
			}
			if tc.unchanged != nil && !tc.unchanged(h, d) {
				t.Errorf("the failed %s changed the device's state", tc.fn)
			}
			if err := tc.call(d); err != nil {
				t.Fatalf("%s fails again once the injection is spent: %v", tc.fn, err)
			}
		})
	}
}

func enable(t *testing.T, d *kernel.PCIDev) {
	t.Helper()
	if err := d.EnableDevice(); err != nil {
		t.Fatal(err)
	}
	d.SetMaster()
}

func TestRequestIRQRefusesATakenVector(t *testing.T) {
	_, d := msixReady(t, 0)
	if _, err := d.AllocIRQVectors(2, 2); err != nil {
		t.Fatal(err)
	}
	h := func(uint8, any) kernel.IRQReturn { return kernel.IRQHandled }
	if err := d.RequestIRQ(0, h, "first", nil); err != nil {
		t.Fatal(err)
	}
	if err := d.RequestIRQ(0, h, "second", nil); !errors.Is(err, kernel.EBUSY) || !strings.Contains(err.Error(), "first") {
		t.Fatalf("a second handler on the vector: %v, want EBUSY naming the first", err)
	}
	d.FreeIRQ(0)
	if err := d.RequestIRQ(0, h, "second", nil); err != nil {
		t.Fatalf("RequestIRQ after FreeIRQ: %v", err)
	}
}
