package driver_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/host/hosttest"
	"github.com/saccbook/saccbook/sacc/kernel"
)

func TestProbeBringsTheDeviceUp(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	log := hosttest.Dmesg(t, h.K)
	for _, want := range []string{"pci 0000:00:03.0: [1b36:1092] type 00 class 0x120000", "BAR 0: assigned [mem 0xc0000000-0xc0001fff]",
		"sacc 0000:00:03.0: enabled 2 MSI-X vectors", "sacc 0000:00:03.0: SACC v1 ready: 64-entry rings"} {
		if !strings.Contains(log, want) {
			t.Errorf("dmesg lacks %q:\n%s", want, log)
		}
	}
	if st := h.M.Device().State(); st.Status != sacc.StatusReady || st.SQSize != 64 {
		t.Fatalf("device state %+v", st)
	}
}

func TestCommandsEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  host.Config
	}{
		{"polling", host.Config{}},
		{"interrupts", host.Config{Driver: driver.Config{Interrupts: true}}},
		{"iommu-polling", host.Config{Kernel: kernel.Config{IOMMU: true}}},
		{"iommu-interrupts-arm64", host.Config{Kernel: kernel.Config{IOMMU: true}, CPU: cpu.Config{Arch: cpu.ARM64}, Driver: driver.Config{Interrupts: true}}},
		{"non-coherent", host.Config{CPU: cpu.Config{NonCoherent: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hosttest.Boot(t, tc.cfg)
			dev := h.Dev
			payload := bytes.Repeat([]byte("saccbook"), 1024) // 8 KiB: crosses pages
			src := hosttest.KernelBuffer(t, h, payload)
			dst := hosttest.KernelBuffer(t, h, make([]byte, len(payload)))
			pd := dev.PCI()
			sdma, err := pd.DMAMapSingle(src, uint64(len(payload)), kernel.DMAToDevice)
			if err != nil {
				t.Fatal(err)
			}
			ddma, err := pd.DMAMapSingle(dst, uint64(len(payload)), kernel.DMAFromDevice)
			if err != nil {
				t.Fatal(err)
			}
			irq := tc.cfg.Driver.Interrupts
			if err := dev.Do(&driver.Request{Opcode: sacc.OpNOP, IRQ: irq}); err != nil {
				t.Fatalf("NOP: %v", err)
			}
			r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: sdma, Dst: ddma, Length: uint32(len(payload)), IRQ: irq}
			if err := dev.Do(r); err != nil || r.ResultLen != uint32(len(payload)) {
				t.Fatalf("MEMCPY: %v %+v", err, r)
			}
			pd.DMAUnmapSingle(ddma, uint64(len(payload)), kernel.DMAFromDevice)
			got := make([]byte, len(payload))
			h.CPU.LoadBytes(dst, got)
			if !bytes.Equal(got, payload) {
				t.Fatalf("MEMCPY moved the wrong bytes")
			}
			ddma, _ = pd.DMAMapSingle(dst, uint64(len(payload)), kernel.DMAFromDevice)
			x := &driver.Request{Opcode: sacc.OpXFORM, Src: sdma, Dst: ddma, Length: 16, IRQ: irq}
			if err := dev.Do(x); err != nil {
				t.Fatalf("XFORM: %v", err)
			}
			pd.DMAUnmapSingle(ddma, uint64(len(payload)), kernel.DMAFromDevice)
			if b := h.CPU.Load8(dst); b != 's'^sacc.XFORMKey {
				t.Fatalf("XFORM wrote %#x", b)
			}
			if irq && dev.Stats.Interrupts == 0 {
				t.Error("interrupt mode took no interrupts")
			}
		})
	}
}

func TestWrapAndBackPressure(t *testing.T) {
	h := hosttest.Boot(t, host.Config{Driver: driver.Config{RingSize: 4}})
	dev := h.Dev
	for i := range 40 { // ten laps of a 4-entry ring
		if err := dev.Do(&driver.Request{Opcode: sacc.OpNOP}); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	reqs := make([]*driver.Request, 6)
	for i := range reqs {
		reqs[i] = &driver.Request{Opcode: sacc.OpNOP}
	}
	n, err := dev.SubmitBatch(reqs)
	if n != 3 || err != driver.ErrRingFull {
		t.Fatalf("batch of 6 into a 4-ring: queued %d, %v", n, err)
	}
	if err := dev.Wait(reqs[2]); err != nil {
		t.Fatal(err)
	}
}

func TestDeviceErrorIsRecovered(t *testing.T) {
	h := hosttest.Boot(t, host.Config{Driver: driver.Config{Interrupts: true}})
	dev := h.Dev
	// A doorbell past the ring halts the device (error 5); the error vector makes
	// the driver reset it and fail what was in flight.
	r := &driver.Request{Opcode: sacc.OpNOP, IRQ: true}
	if err := dev.Submit(r); err != nil {
		t.Fatal(err)
	}
	h.CPU.Writel(dev.PCI().BAR[0].Start+sacc.RegSQTail, 999)
	dev.Wait(r) // the NOP may complete before the bad doorbell or fail with the reset
	for range 100 {
		h.CPU.Relax()
	}
	if dev.Stats.Resets == 0 {
		t.Fatalf("no reset after a device error; dmesg:\n%s", hosttest.Dmesg(t, h.K))
	}
	if err := dev.Do(&driver.Request{Opcode: sacc.OpNOP, IRQ: true}); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	if !strings.Contains(hosttest.Dmesg(t, h.K), "ERR_CODE 0x5") {
		t.Errorf("dmesg does not name the error:\n%s", hosttest.Dmesg(t, h.K))
	}
}

func TestPerCommandErrorsAreReported(t *testing.T) {
	h := hosttest.Boot(t, host.Config{Kernel: kernel.Config{IOMMU: true}})
	r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: 0xDEAD_0000, Dst: 0xBEEF_0000, Length: 8}
	if err := h.Dev.Do(r); err == nil || r.Status != sacc.StatusBadAddress {
		t.Fatalf("unmapped IOVAs: %v %+v", err, r)
	}
	if err := h.Dev.Do(&driver.Request{Opcode: 0x55}); err == nil {
		t.Fatal("bad opcode accepted")
	}
	if err := h.Dev.Do(&driver.Request{Opcode: sacc.OpNOP}); err != nil {
		t.Fatalf("device unusable after command errors: %v", err)
	}
}

func TestRemoveUndoesProbe(t *testing.T) {
	h := hosttest.Boot(t, host.Config{Kernel: kernel.Config{IOMMU: true}})
	before := h.K.MemInUse()
	h.Drv.Unregister()
	st := h.M.Device().State()
	if st.Ctrl != 0 || st.Status&sacc.StatusReady != 0 {
		t.Fatalf("device still enabled after remove: %+v", st)
	}
	if h.K.MemInUse() >= before {
		t.Fatalf("remove freed no memory: %d → %d", before, h.K.MemInUse())
	}
	if cmd := h.M.Device().Config().Command(); cmd&(sacc.CmdBusMaster|sacc.CmdMemorySpace) != 0 {
		t.Fatalf("COMMAND %#x after remove", cmd)
	}
}
