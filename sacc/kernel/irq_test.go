package kernel_test

import (
	"fmt"
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

// msixReady boots without the driver and brings the function to the point where
// its MSI-X table decodes and it may send messages.
func msixReady(t *testing.T, q quirk.Set) (*host.Host, *kernel.PCIDev) {
	t.Helper()
	h, d := bare(t, host.Config{Kernel: kernel.Config{Quirks: q}})
	if err := d.EnableDevice(); err != nil {
		t.Fatal(err)
	}
	d.SetMaster()
	return h, d
}

func TestAllocIRQVectorsProgramsTheMSIXTable(t *testing.T) {
	h, d := msixReady(t, 0)
	st := h.M.Device().State()
	if st.MSIXControl&sacc.MSIXCtrlEnable != 0 {
		t.Fatal("MSI-X enabled before AllocIRQVectors")
	}
	n, err := d.AllocIRQVectors(1, 8)
	if err != nil || n != sacc.MSIXVectors {
		t.Fatalf("AllocIRQVectors(1, 8) = %d, %v; want %d", n, err, sacc.MSIXVectors)
	}
	st = h.M.Device().State()
	if st.MSIXControl&sacc.MSIXCtrlEnable == 0 {
		t.Errorf("MSI-X control %#x: not enabled", st.MSIXControl)
	}
	if st.MSIXControl&sacc.MSIXCtrlFunctionMask != 0 {
		t.Errorf("MSI-X control %#x: function masked", st.MSIXControl)
	}
	seen := map[uint32]bool{}
	for i := range n {
		e := st.MSIX[i]
		v, err := d.IRQVector(i)
		if err != nil {
			t.Fatal(err)
		}
		if !sacc.InIntWindow(e.Addr) || e.Addr != sacc.IntWindowBase {
			t.Errorf("entry %d address %#x is not in the interrupt window", i, e.Addr)
		}
		if e.Data != uint32(v) || sacc.MSIVector(e.Data) != v {
			t.Errorf("entry %d data %#x, want the vector %#x", i, e.Data, v)
		}
		if v < 0x30 || v > 0xEF {
			t.Errorf("entry %d vector %#x outside the device range", i, v)
		}
		if seen[e.Data] {
			t.Errorf("vector %#x handed out twice", e.Data)
		}
		seen[e.Data] = true
		if !e.Masked() {
			t.Errorf("entry %d is unmasked before request_irq", i)
		}
	}
	if _, err := d.IRQVector(n); err == nil {
		t.Error("IRQVector past the allocated entries succeeded")
	}
	if _, err := d.IRQVector(-1); err == nil {
		t.Error("IRQVector(-1) succeeded")
	}
	if !strings.Contains(hosttest.Dmesg(t, h.K), "pci 0000:00:03.0: enabled 2 MSI-X vectors (0x30-0x31)") {
		t.Errorf("dmesg:\n%s", hosttest.Dmesg(t, h.K))
	}
}

func TestAllocIRQVectorsLimits(t *testing.T) {
	for _, tc := range []struct {
		min, max int
		want     int
		err      string
	}{
		{1, 1, 1, ""},
		{2, 2, 2, ""},
		{1, 2, 2, ""},
		{3, 4, 0, "device has 2 MSI-X vectors, need 3"},
		{2, 1, 0, "device has 1 MSI-X vectors, need 2"},
	} {
		t.Run(fmt.Sprintf("min%d-max%d", tc.min, tc.max), func(t *testing.T) {
			h, d := msixReady(t, 0)
			n, err := d.AllocIRQVectors(tc.min, tc.max)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("AllocIRQVectors = %d, %v; want error %q", n, err, tc.err)
				}
				if h.M.Device().State().MSIXControl&sacc.MSIXCtrlEnable != 0 {
					t.Fatal("a failed allocation enabled MSI-X")
				}
				return
			}
			if err != nil || n != tc.want {
				t.Fatalf("AllocIRQVectors = %d, %v; want %d", n, err, tc.want)
			}
		})
	}
}

func TestAllocIRQVectorsNeedsTheTableBAR(t *testing.T) {
	// With the BAR-sizing bug the table is not where the kernel writes it: the
	// entries stay at their power-on values (masked, address 0).
	h, d := msixReady(t, quirk.Set(0).With(quirk.BARSizingNoMask))
	if _, err := d.AllocIRQVectors(2, 2); err != nil {
		t.Fatal(err)
	}
	for i, e := range h.M.Device().State().MSIX {
		if e.Addr != 0 || e.Data != 0 || !e.Masked() {
			t.Errorf("entry %d %+v changed although BAR1 does not decode there", i, e)
		}
	}
}

func TestRequestIRQUnmasksAndFreeIRQMasks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		quirks   quirk.Set
		unmasked bool
	}{
		{"as specified", 0, true},
		{"vector left masked", quirk.Set(0).With(quirk.VectorLeftMasked), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, d := msixReady(t, tc.quirks)
			if _, err := d.AllocIRQVectors(2, 2); err != nil {
				t.Fatal(err)
			}
			h0 := func(uint8, any) kernel.IRQReturn { return kernel.IRQHandled }
			if err := d.RequestIRQ(0, h0, "t-cq", nil); err != nil {
				t.Fatal(err)
			}
			h.K.CPU.Delay(h.M.Cost().MMIOWrite) // the unmask is a posted write
			st := h.M.Device().State()
			if st.MSIX[0].Masked() == tc.unmasked {
				t.Errorf("entry 0 masked=%v after request_irq, want %v", st.MSIX[0].Masked(), !tc.unmasked)
			}
			if !st.MSIX[1].Masked() {
				t.Error("entry 1 unmasked by request_irq of entry 0")
			}
			v, _ := d.IRQVector(0)
			if _, name := h.K.IRQCount(v); name != "t-cq" {
				t.Errorf("IRQCount name %q", name)
			}
			d.FreeIRQ(0)
			if !h.M.Device().State().MSIX[0].Masked() {
				t.Error("entry 0 unmasked after free_irq")
			}
			if _, name := h.K.IRQCount(v); name != "" {
				t.Errorf("handler %q still installed after free_irq", name)
			}
			if err := d.RequestIRQ(2, h0, "t", nil); err == nil {
				t.Error("RequestIRQ of an unallocated entry succeeded")
			}
			d.FreeIRQ(7) // not allocated: nothing happens
			d.FreeIRQVectors()
			if h.M.Device().State().MSIXControl&sacc.MSIXCtrlEnable != 0 {
				t.Error("MSI-X still enabled after FreeIRQVectors")
			}
			if _, err := d.IRQVector(0); err == nil {
				t.Error("vectors survive FreeIRQVectors")
			}
		})
	}
}

// TestDeviceInterruptReachesTheHandler makes the device send its error vector (a
// doorbell while it is not enabled is device error 4, §7.6) and checks the
// handler runs with its data, and /proc/interrupts counts it.
func TestDeviceInterruptReachesTheHandler(t *testing.T) {
	for _, tc := range []struct {
		name     string
		quirks   quirk.Set
		request  bool
		want     uint64
		pbaAfter bool
	}{
		{"requested", 0, true, 1, false},
		{"vector left masked", quirk.Set(0).With(quirk.VectorLeftMasked), true, 0, true},
		{"never requested", 0, false, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, d := msixReady(t, tc.quirks)
			if _, err := d.AllocIRQVectors(2, 2); err != nil {
				t.Fatal(err)
			}
			type call struct {
				v    uint8
				data any
			}
			var calls []call
			cookie := &struct{ name string }{"cookie"}
			if tc.request {
				err := d.RequestIRQ(sacc.MSIXVectorError, func(v uint8, data any) kernel.IRQReturn {
					calls = append(calls, call{v, data})
					if !h.CPU.InIRQ() {
						t.Error("handler runs outside interrupt context")
					}
					return kernel.IRQHandled
				}, "t-err", cookie)
				if err != nil {
					t.Fatal(err)
				}
			}
			regs, err := d.IOMap(0)
			if err != nil {
				t.Fatal(err)
			}
			before := h.K.Stats
			regs.Writel(sacc.RegSQTail, 1)
			h.CPU.Delay(20_000)
			if st := h.M.Device().State(); st.ErrCode != uint32(sacc.StatusNotEnabled) {
				t.Fatalf("ERR_CODE %#x, want 4", st.ErrCode)
			}
			v, _ := d.IRQVector(sacc.MSIXVectorError)
			if uint64(len(calls)) != tc.want {
				t.Fatalf("handler ran %d times, want %d", len(calls), tc.want)
			}
			for _, c := range calls {
				if c.v != v || c.data != cookie {
					t.Errorf("handler called with vector %#x data %v, want %#x %v", c.v, c.data, v, cookie)
				}
			}
			if n, _ := h.K.IRQCount(v); n != tc.want {
				t.Errorf("IRQCount %d, want %d", n, tc.want)
			}
			if got := h.K.Stats.IRQs - before.IRQs; got != tc.want {
				t.Errorf("Stats.IRQs grew by %d, want %d", got, tc.want)
			}
			if got := h.K.Stats.KernelCrossing - before.KernelCrossing; got != tc.want {
				t.Errorf("Stats.KernelCrossing grew by %d, want %d", got, tc.want)
			}
			if pending := h.M.Device().State().PBA&(1<<sacc.MSIXVectorError) != 0; pending != tc.pbaAfter {
				t.Errorf("PBA bit of the error vector %v, want %v", pending, tc.pbaAfter)
			}
		})
	}
}

func TestUnclaimedVectorIsLogged(t *testing.T) {
	h, _ := bare(t, host.Config{})
	evs := record(t, h, trace.IRQExit)
	h.CPU.Writel(sacc.IntWindowBase, 0x99) // an MSI nobody asked for
	h.CPU.Delay(10_000)
	if !strings.Contains(hosttest.Dmesg(t, h.K), "do_IRQ: no handler for vector 0x99") {
		t.Fatalf("dmesg:\n%s", hosttest.Dmesg(t, h.K))
	}
	if h.K.Stats.IRQs != 1 {
		t.Errorf("Stats.IRQs %d", h.K.Stats.IRQs)
	}
	if n, _ := h.K.IRQCount(0x99); n != 0 {
		t.Errorf("IRQCount of an unclaimed vector %d", n)
	}
	if len(*evs) != 1 || (*evs)[0].Args[0] != 0x99 || (*evs)[0].Args[1] != 0 {
		t.Fatalf("irq exits %v, want one unhandled exit for 0x99", *evs)
	}
}

func TestInterruptHandlerReturnValueIsReported(t *testing.T) {
	for _, ret := range []kernel.IRQReturn{kernel.IRQHandled, kernel.IRQNone} {
		h, d := msixReady(t, 0)
		if _, err := d.AllocIRQVectors(2, 2); err != nil {
			t.Fatal(err)
		}
		if err := d.RequestIRQ(0, func(uint8, any) kernel.IRQReturn { return ret }, "t", nil); err != nil {
			t.Fatal(err)
		}
		v, _ := d.IRQVector(0)
		evs := record(t, h, trace.IRQExit)
		h.CPU.Writel(sacc.IntWindowBase, uint32(v))
		h.CPU.Delay(10_000)
		want := uint64(0)
		if ret == kernel.IRQHandled {
			want = 1
		}
		if len(*evs) != 1 || (*evs)[0].Args[1] != want {
			t.Fatalf("handler returning %v: irq exits %v", ret, *evs)
		}
		if n, _ := h.K.IRQCount(v); n != 1 {
			t.Fatalf("IRQCount %d", n)
		}
	}
}

func TestDriverInterruptsAreCounted(t *testing.T) {
	h := hosttest.Boot(t, host.Config{Driver: driver.Config{Interrupts: true}})
	v, _ := h.Dev.PCI().IRQVector(sacc.MSIXVectorComplete)
	src := hosttest.KernelBuffer(t, h, pattern(64, 1))
	dst := hosttest.KernelBuffer(t, h, make([]byte, 64))
	for i := range 3 {
		if _, err := doMemcpy(h, src, dst, 64, true); err != nil {
			t.Fatal(err)
		}
		if n, name := h.K.IRQCount(v); n != uint64(i+1) || name != "sacc-cq" {
			t.Fatalf("after %d commands IRQCount = %d %q", i+1, n, name)
		}
	}
}
