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
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
	"github.com/saccbook/saccbook/sacc/user"
)

// TestRecoveryRunsAsAWorkItemAndStopsDMAFirst: the error interrupt only queues
// the recovery; it runs after the handler has returned, resets the device and
// sees the reset land before it fails the request in flight.
func TestRecoveryRunsAsAWorkItemAndStopsDMAFirst(t *testing.T) {
	h := hosttest.Boot(t, host.Config{Driver: driver.Config{Interrupts: true, Timeout: 200_000}})
	dev := h.Dev
	src := hosttest.KernelBuffer(t, h, make([]byte, 16384))
	dst := hosttest.KernelBuffer(t, h, make([]byte, 16384))
	r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: 16384, IRQ: true}
	errVec, _ := dev.PCI().IRQVector(sacc.MSIXVectorError)
	var (
		resetsAtExit   = -1
		failedAtReset  = true
		resetLanded    bool
		handlerRanWork bool
	)
	h.M.Tracer().Attach(trace.Func(func(ev trace.Event) {
		switch {
		case ev.Kind == trace.IRQEntry && uint8(ev.Args[0]) == errVec:
			resetsAtExit = -1
		case ev.Kind == trace.IRQExit && uint8(ev.Args[0]) == errVec:
			resetsAtExit = int(dev.Stats.Resets)
		case ev.Kind == trace.Reset:
			resetLanded = true
			failedAtReset = r.Err != nil
			handlerRanWork = h.CPU.InIRQ()
		}
	}))
	if err := dev.Submit(r); err != nil {
		t.Fatal(err)
	}
	h.CPU.Writel(dev.PCI().BAR[0].Start+sacc.RegSQTail, 999) // halts the device (error 5) mid-copy
	err := dev.Wait(r)
	switch {
	case !errors.Is(err, driver.ErrDeviceErr):
		t.Fatalf("the copy in flight ended with %v, want ErrDeviceErr", err)
	case !resetLanded:
		t.Fatal("the device was never reset")
	case resetsAtExit != 0:
		t.Fatalf("the error handler returned with %d resets done: recovery ran inside the interrupt handler", resetsAtExit)
	case handlerRanWork:
		t.Fatal("the reset reached the device while the CPU was in an interrupt handler")
	case failedAtReset:
		t.Fatal("the request had failed before the reset landed: its buffers could be freed while the device may still write them")
	}
	if err := dev.Do(&driver.Request{Opcode: sacc.OpNOP, IRQ: true}); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
}

// TestWorkQueueRunsAfterTheInterruptReturns: a work item queued in a handler runs
// once, in process context, and a second queue_work before it runs is the same run.
func TestWorkQueueRunsAfterTheInterruptReturns(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	var w kernel.Work
	runs, inIRQ := 0, false
	kernel.InitWork(&w, func() { runs++; inIRQ = h.CPU.InIRQ() })
	if !h.K.QueueWork(&w) || h.K.QueueWork(&w) || !w.Pending() {
		t.Fatal("queue_work: first call should queue, second should find it pending")
	}
	// Nothing runs it until the CPU comes back from an interrupt.
	h.CPU.Delay(1000)
	if runs != 0 {
		t.Fatal("the work ran with no interrupt taken")
	}
	h.M.Interrupt(sacc.IntWindowBase, 0x40) // an MSI for vector 0x40 (nobody's)
	h.CPU.Relax()
	if runs != 1 || inIRQ || w.Pending() {
		t.Fatalf("after an interrupt returned: %d runs (in IRQ: %v, pending %v), want 1 in process context", runs, inIRQ, w.Pending())
	}
}

// bypassProcess opens /dev/sacc0 in a new process and maps the doorbell page.
func bypassProcess(t *testing.T, h *host.Host) (*kernel.Process, int, uint64) {
	t.Helper()
	p := h.K.NewProcess("app")
	fd, err := p.Open(driver.DevPath)
	if err != nil {
		t.Fatal(err)
	}
	va, err := p.Mmap(fd, sacc.DoorbellPage, sacc.PageSize)
	if err != nil {
		t.Fatal(err)
	}
	return p, fd, va
}

// ringFaults reports whether a store to the doorbell through va stops the run
// with a segmentation fault.
func ringFaults(t *testing.T, p *kernel.Process, va uint64) bool {
	t.Helper()
	err := sim.Run(func() error {
		p.Store32(va+sacc.RegSQTail-sacc.DoorbellPage, 0)
		return nil
	})
	var sf *kernel.Segfault
	if err != nil && !errors.As(err, &sf) {
		t.Fatalf("ringing ended with %v, want nothing or a segmentation fault", err)
	}
	return sf != nil
}

// TestStaleDoorbellMappingsAreRevoked: after a reset, after the queue is given
// back, and after remove, a process's old mapping of the doorbell page faults
// instead of ringing the device.
func TestStaleDoorbellMappingsAreRevoked(t *testing.T) {
	t.Run("reset", func(t *testing.T) {
		h := hosttest.Boot(t, host.Config{})
		p, _, va := bypassProcess(t, h)
		if ringFaults(t, p, va) {
			t.Fatal("the fresh mapping faults")
		}
		if err := h.Dev.Reset(); err != nil {
			t.Fatal(err)
		}
		if !ringFaults(t, p, va) {
			t.Fatal("after a reset the old doorbell mapping still rings the device")
		}
		if !strings.Contains(hosttest.Dmesg(t, h.K), "revoked 1 user mapping") {
			t.Errorf("dmesg does not tell of the revocation:\n%s", hosttest.Dmesg(t, h.K))
		}
	})
	t.Run("release", func(t *testing.T) {
		h := hosttest.Boot(t, host.Config{Kernel: kernel.Config{IOMMU: true}})
		p := h.K.NewProcess("app")
		q, err := user.Open(p, 8)
		if err != nil {
			t.Fatal(err)
		}
		va := q.DoorbellVA()
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		if !ringFaults(t, p, va) {
			t.Fatal("after the queue went back to the kernel the process's doorbell mapping still rings it")
		}
		if err := h.Dev.Do(&driver.Request{Opcode: sacc.OpNOP}); err != nil {
			t.Fatalf("the kernel queue after the release: %v", err)
		}
	})
	t.Run("remove", func(t *testing.T) {
		h := hosttest.Boot(t, host.Config{})
		p, _, va := bypassProcess(t, h)
		h.Drv.Unregister()
		if !ringFaults(t, p, va) {
			t.Fatal("after remove the old doorbell mapping still reaches BAR0")
		}
	})
}

// TestTeardownFreesOnlyAStoppedDevice: remove writes CTRL=0 (posted) and frees
// the rings only after a STATUS read-back has shown the device stopped.
func TestTeardownFreesOnlyAStoppedDevice(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	var order []string
	ctrlLanded := false
	h.M.Tracer().Attach(trace.Func(func(ev trace.Event) {
		switch {
		case ev.Kind == trace.RegWrite && ev.Args[0] == sacc.RegCTRL && ev.Args[2] == 0:
			ctrlLanded = true
			order = append(order, "CTRL=0 lands")
		case ev.Kind == trace.RegRead && ev.Args[0] == sacc.RegSTATUS && ctrlLanded:
			order = append(order, "STATUS read")
		}
	}))
	before := h.K.MemInUse()
	h.Drv.Unregister()
	if h.K.MemInUse() >= before {
		t.Fatal("remove freed nothing")
	}
	if len(order) < 2 || order[0] != "CTRL=0 lands" || order[1] != "STATUS read" {
		t.Fatalf("teardown did %v; want CTRL=0 to land and STATUS to be read back before the rings are freed", order)
	}
	if st := h.M.Device().State(); st.Status&sacc.StatusReady != 0 {
		t.Fatalf("STATUS %#x after remove", st.Status)
	}
}
