package driver_test

import (
	"bytes"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/host/hosttest"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
)

// copyJobs runs n MEMCPYs of distinct data and reports whether every one arrived.
func copyJobs(t *testing.T, h *host.Host, n int) bool {
	t.Helper()
	dev, pd := h.Dev, h.Dev.PCI()
	for i := range n {
		payload := bytes.Repeat([]byte{byte(i + 1)}, 256)
		src := hosttest.KernelBuffer(t, h, payload)
		dst := hosttest.KernelBuffer(t, h, make([]byte, 256))
		s, _ := pd.DMAMapSingle(src, 256, kernel.DMAToDevice)
		d, _ := pd.DMAMapSingle(dst, 256, kernel.DMAFromDevice)
		r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: s, Dst: d, Length: 256}
		err := dev.Do(r)
		pd.DMAUnmapSingle(d, 256, kernel.DMAFromDevice)
		got := make([]byte, 256)
		h.CPU.LoadBytes(dst, got)
		if err != nil || !bytes.Equal(got, payload) {
			return false
		}
	}
	return true
}

// TestMissingBarrierShowsOnlyOnARM64: a driver that rings the doorbell with
// writel_relaxed and no wmb works on x86, whose stores reach memory in order, and
// breaks on arm64 for some seed: the device fetches the descriptor before it is
// in memory.
func TestMissingBarrierShowsOnlyOnARM64(t *testing.T) {
	bug := quirk.Set(0).With(quirk.MissingWMB)
	for seed := uint64(1); seed <= 30; seed++ {
		h := hosttest.Boot(t, host.Config{Machine: machine.Config{Seed: seed, Quirks: bug}, CPU: cpu.Config{Arch: cpu.X86}, Driver: driver.Config{Timeout: 50_000}})
		if !copyJobs(t, h, 4) {
			t.Fatalf("x86, seed %d: the barrier-less driver failed; TSO should hide the bug", seed)
		}
	}
	failing := uint64(0)
	for seed := uint64(1); seed <= 200 && failing == 0; seed++ {
		h := hosttest.Boot(t, host.Config{Machine: machine.Config{Seed: seed, Quirks: bug}, CPU: cpu.Config{Arch: cpu.ARM64}, Driver: driver.Config{Timeout: 50_000}})
		if !copyJobs(t, h, 4) {
			failing = seed
		}
	}
	if failing == 0 {
		t.Fatal("no seed in 1..200 showed the missing barrier on arm64")
	}
	t.Logf("arm64 seed %d shows the missing wmb", failing)
	// The same seed with the barrier in place is fine.
	h := hosttest.Boot(t, host.Config{Machine: machine.Config{Seed: failing}, CPU: cpu.Config{Arch: cpu.ARM64}})
	if !copyJobs(t, h, 4) {
		t.Fatalf("arm64 seed %d fails even with the barrier", failing)
	}
}

// TestMissingSyncShowsStaleData: on a non-coherent system the CPU reads the
// destination through its cache; without dma_sync_single_for_cpu (or unmap) it
// sees what the line held before the device wrote.
func TestMissingSyncShowsStaleData(t *testing.T) {
	for _, sync := range []bool{true, false} {
		h := hosttest.Boot(t, host.Config{CPU: cpu.Config{NonCoherent: true}})
		pd := h.Dev.PCI()
		src := hosttest.KernelBuffer(t, h, bytes.Repeat([]byte{0xAB}, 64))
		dst := hosttest.KernelBuffer(t, h, make([]byte, 64))
		_ = h.CPU.Load64(dst) // the line is now cached, holding zeros
		s, _ := pd.DMAMapSingle(src, 64, kernel.DMAToDevice)
		d, _ := pd.DMAMapSingle(dst, 64, kernel.DMAFromDevice)
		if err := h.Dev.Do(&driver.Request{Opcode: sacc.OpMEMCPY, Src: s, Dst: d, Length: 64}); err != nil {
			t.Fatal(err)
		}
		if sync {
			pd.DMASyncSingleForCPU(d, 64, kernel.DMAFromDevice)
		}
		got := h.CPU.Load64(dst)
		if sync && got != 0xABABABABABABABAB {
			t.Errorf("with dma_sync the CPU reads %#x", got)
		}
		if !sync && got != 0 {
			t.Errorf("without dma_sync the CPU should read the stale line, read %#x", got)
		}
	}
}

// raceLoses runs the race of §9 with handler quirks q: job B, a copy of bLen
// bytes, completes while the handler runs for job A's interrupt. It reports
// whether B's waiter timed out, its interrupt lost.
func raceLoses(t *testing.T, q quirk.Set, bLen uint32) bool {
	t.Helper()
	h := hosttest.Boot(t, host.Config{Machine: machine.Config{Quirks: q}, Driver: driver.Config{Interrupts: true, Timeout: 200_000}})
	src := hosttest.KernelBuffer(t, h, make([]byte, 4096))
	dst := hosttest.KernelBuffer(t, h, make([]byte, 4096))
	a := &driver.Request{Opcode: sacc.OpNOP, IRQ: true}
	b := &driver.Request{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: bLen, IRQ: true}
	if _, err := h.Dev.SubmitBatch([]*driver.Request{a, b}); err != nil {
		t.Fatal(err)
	}
	return h.Dev.Wait(b) != nil
}

// firstLoss is the first length of job B, in steps of 32 bytes, whose interrupt
// the handler with quirks q loses; 0 if none does.
func firstLoss(t *testing.T, q quirk.Set) uint32 {
	for bLen := uint32(64); bLen <= 4096; bLen += 32 {
		if raceLoses(t, q, bLen) {
			return bLen
		}
	}
	return 0
}

// TestDrainThenAckLosesAnInterrupt: a handler that drains and then acknowledges
// clears IRQ_STATUS after B's completion set it, so B's interrupt never comes.
func TestDrainThenAckLosesAnInterrupt(t *testing.T) {
	lost := firstLoss(t, quirk.Set(0).With(quirk.DrainThenAck))
	if lost == 0 {
		t.Fatal("no length of job B made the drain-then-ack handler lose an interrupt")
	}
	t.Logf("drain, then ack: job B of %d bytes is lost", lost)
}

// TestAckThenDrainWithoutReadbackLosesAnInterrupt: the acknowledgement is a
// posted write; a completion posted while it is on the wire sees IRQ_STATUS still
// set and sends nothing, and the drain already ran.
func TestAckThenDrainWithoutReadbackLosesAnInterrupt(t *testing.T) {
	lost := firstLoss(t, quirk.Set(0).With(quirk.AckWithoutReadback))
	if lost == 0 {
		t.Fatal("no length of job B made the ack-then-drain handler (no read-back) lose an interrupt")
	}
	t.Logf("ack, then drain: job B of %d bytes is lost", lost)
}

// TestAckReadbackDrainLosesNothing: the driver's own order, acknowledge, read a
// register back, drain, loses no interrupt whatever the timing.
func TestAckReadbackDrainLosesNothing(t *testing.T) {
	if lost := firstLoss(t, 0); lost != 0 {
		t.Fatalf("ack, read back, drain lost job B of %d bytes", lost)
	}
}
