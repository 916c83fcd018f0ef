package cpu_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/baremetal"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/trace"
)

func setup(t testing.TB, seed uint64, cfg cpu.Config) (*cpu.CPU, *baremetal.Host) {
	t.Helper()
	m, err := machine.New(machine.Config{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	h, err := baremetal.Enumerate(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(baremetal.SQAddr, 16, baremetal.CQAddr, 16); err != nil {
		t.Fatal(err)
	}
	return cpu.New(m, cfg), h
}

// submit writes a descriptor field by field through the CPU, as a driver does,
// then rings the doorbell, with or without a barrier, relaxed or not.
func submit(c *cpu.CPU, h *baremetal.Host, slot uint32, d sacc.Descriptor, barrier, relaxed bool) {
	base := h.SQ + uint64(slot)*sacc.DescriptorSize
	c.Store64(base+sacc.DescSrcOff, d.Src)
	c.Store64(base+sacc.DescDstOff, d.Dst)
	c.Store32(base+sacc.DescLenOff, d.Length)
	c.Store16(base+sacc.DescOpOff, d.Opcode)
	c.Store16(base+sacc.DescFlagsOff, d.Flags)
	c.Store32(base+sacc.DescReqIDOff, d.ReqID)
	if barrier {
		c.WMB() // make the descriptor visible before the doorbell publishes it
	}
	db := h.BAR0 + sacc.RegSQTail
	if relaxed {
		c.WritelRelaxed(db, slot+1)
	} else {
		c.Writel(db, slot+1)
	}
}

// fetched runs the machine and returns the descriptor the device read.
func fetched(t *testing.T, c *cpu.CPU) (sacc.Descriptor, bool) {
	t.Helper()
	var got sacc.Descriptor
	var seen bool
	detach := c.Machine().Tracer().Attach(trace.Func(func(ev trace.Event) {
		if ev.Kind == trace.Descriptor && !seen {
			seen = true
			got = sacc.Descriptor{ReqID: uint32(ev.Args[0]), Opcode: uint16(ev.Args[1]), Length: uint32(ev.Args[2])}
		}
	}))
	defer detach()
	for range 2000 {
		c.Relax()
		if seen {
			break
		}
	}
	return got, seen
}

func TestX86NeverReordersTheDoorbell(t *testing.T) {
	want := sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 0x42, Length: 7}
	for seed := uint64(1); seed <= 50; seed++ {
		c, h := setup(t, seed, cpu.Config{Arch: cpu.X86})
		submit(c, h, 0, want, false, true)
		got, ok := fetched(t, c)
		if !ok || got.ReqID != want.ReqID {
			t.Fatalf("seed %d: x86 without a barrier fetched %+v (seen %v)", seed, got, ok)
		}
	}
}

// TestARM64NeedsTheBarrier: with writel_relaxed and no wmb, some seed lets the
// doorbell overtake the descriptor — the device fetches zeros, a NOP with req_id 0.
// With the barrier, or with writel, no seed does.
func TestARM64NeedsTheBarrier(t *testing.T) {
	want := sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 0x42, Length: 7}
	failing := uint64(0)
	for seed := uint64(1); seed <= 200 && failing == 0; seed++ {
		c, h := setup(t, seed, cpu.Config{Arch: cpu.ARM64})
		submit(c, h, 0, want, false, true)
		if got, _ := fetched(t, c); got.ReqID != want.ReqID {
			failing = seed
		}
	}
	if failing == 0 {
		t.Fatal("no seed in 1..200 showed the missing barrier on arm64")
	}
	t.Logf("seed %d shows the stale descriptor", failing)
	for _, tc := range []struct {
		name             string
		barrier, relaxed bool
	}{{"wmb then writel_relaxed", true, true}, {"writel", false, false}} {
		for seed := uint64(1); seed <= 200; seed++ {
			c, h := setup(t, seed, cpu.Config{Arch: cpu.ARM64})
			submit(c, h, 0, want, tc.barrier, tc.relaxed)
			if got, ok := fetched(t, c); !ok || got.ReqID != want.ReqID {
				t.Fatalf("%s, seed %d: fetched %+v", tc.name, seed, got)
			}
		}
	}
}

func TestStoreBufferForwardsToTheCPU(t *testing.T) {
	c, _ := setup(t, 3, cpu.Config{Arch: cpu.ARM64})
	addr := uint64(baremetal.DataAddr)
	c.Store64(addr, 0x1122334455667788)
	if c.Pending() == 0 {
		t.Skip("the store drained at once for this seed")
	}
	if got := c.Machine().RAM().Load(addr, 8); got != 0 {
		t.Fatalf("memory shows a buffered store: %#x", got)
	}
	if got := c.Load64(addr); got != 0x1122334455667788 {
		t.Fatalf("the CPU does not see its own store: %#x", got)
	}
}

// TestNonCoherentNeedsSync: without cache maintenance the device reads stale
// memory and the CPU reads a stale line; dma_sync-style clean and invalidate fix
// both.
func TestNonCoherentNeedsSync(t *testing.T) {
	for _, synced := range []bool{false, true} {
		c, h := setup(t, 1, cpu.Config{Arch: cpu.X86, NonCoherent: true})
		c.SetUncached(h.SQ, sacc.PageSize) // rings are coherent memory
		c.SetUncached(h.CQ, sacc.PageSize)
		src, dst := uint64(baremetal.DataAddr), uint64(baremetal.DataAddr+sacc.PageSize)
		_ = c.Load64(dst) // the CPU caches the destination line
		c.Store64(src, 0xFEEDFACE)
		if synced {
			c.CleanRange(src, 8) // dma_sync_single_for_device
		}
		submit(c, h, 0, sacc.Descriptor{Src: src, Dst: dst, Length: 8, Opcode: sacc.OpMEMCPY, ReqID: 1}, true, false)
		if _, err := h.Wait(100_000); err != nil {
			t.Fatal(err)
		}
		if synced {
			c.InvalidateRange(dst, 8) // dma_sync_single_for_cpu
		}
		got := c.Load64(dst)
		if synced && got != 0xFEEDFACE {
			t.Errorf("with syncs the CPU reads %#x", got)
		}
		if !synced && got == 0xFEEDFACE {
			t.Errorf("without syncs the CPU should read stale data, read %#x", got)
		}
	}
}

func TestInterruptsAreTakenBetweenOperations(t *testing.T) {
	c, h := setup(t, 1, cpu.Config{})
	h.EnableMSIX(0, sacc.IntWindowBase, 0x33)
	var got []uint8
	c.SetIRQHandler(func(v uint8) bool { got = append(got, v); return true })
	c.EnableIRQs()
	submit(c, h, 0, sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 1, Flags: sacc.FlagInterrupt}, true, false)
	for range 2000 {
		c.Relax()
	}
	if len(got) != 1 || got[0] != 0x33 {
		t.Fatalf("handler saw %v", got)
	}
	if c.Stats().Interrupts != 1 {
		t.Fatalf("stats %+v", c.Stats())
	}
}

func TestCPUEventsCarryTheirSource(t *testing.T) {
	c, h := setup(t, 1, cpu.Config{})
	var pc uintptr
	c.Machine().Tracer().Attach(trace.Func(func(ev trace.Event) {
		if ev.Kind == trace.Doorbell {
			pc = ev.PC
		}
	}))
	c.Writel(h.BAR0+sacc.RegSQTail, 0)    // the line under test
	c.Delay(c.Machine().Cost().MMIOWrite) // the posted write lands
	if pc == 0 {
		t.Fatal("doorbell event has no source")
	}
}

// TestSourceIsTheCallerNotTheAccessor: events carry the line that asked for the
// access, past the CPU's own width helpers.
func TestSourceIsTheCallerNotTheAccessor(t *testing.T) {
	c, h := setup(t, 1, cpu.Config{})
	var pcs []uintptr
	c.Machine().Tracer().Attach(trace.Func(func(ev trace.Event) {
		if ev.Kind == trace.CPUWrite || ev.Kind == trace.Doorbell {
			pcs = append(pcs, ev.PC)
		}
	}))
	c.Store64(h.SQ, 1)
	c.Writel(h.BAR0+sacc.RegSQTail, 0)
	c.Delay(c.Machine().Cost().MMIOWrite) // the posted write lands
	if len(pcs) < 2 {
		t.Fatalf("events %v", pcs)
	}
	for _, pc := range pcs {
		f := runtime.FuncForPC(pc - 1)
		if f == nil || !strings.HasSuffix(f.Name(), "TestSourceIsTheCallerNotTheAccessor") {
			t.Errorf("event source is %v, want this test", f.Name())
		}
	}
}

// TestSameAddressStoresLandInOrder: however the weak model reorders stores to
// different places, two stores to the same bytes reach memory in program order.
func TestSameAddressStoresLandInOrder(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		c, _ := setup(t, seed, cpu.Config{Arch: cpu.ARM64})
		addr := uint64(baremetal.DataAddr)
		c.Store64(addr, 0)
		c.Store32(addr+64, 7) // something else in between
		c.Store64(addr, 0xDA7A)
		c.Store32(addr, 0x1234) // overlaps the low half
		c.Delay(10_000)
		if got := c.Machine().RAM().Load(addr, 8); got != 0x1234 {
			t.Fatalf("seed %d: memory holds %#x, want 0x1234 (the last store)", seed, got)
		}
	}
}

// TestEarlyLoadsOnlyOnARM64WithoutRMB polls a completion's phase and then reads
// its body, with and without rmb between, on both models: only arm64 without
// the barrier ever reads a body older than the phase it saw.
func TestEarlyLoadsOnlyOnARM64WithoutRMB(t *testing.T) {
	stale := func(arch cpu.Arch, rmb bool) int {
		n := 0
		for seed := uint64(1); seed <= 40; seed++ {
			c, h := setup(t, seed, cpu.Config{Arch: arch})
			cq := h.CQ
			c.Store32(cq, 0x77) // last lap's entry in slot 0: req_id 0x77, phase 0
			c.WMB()
			_ = c.Load16(cq + sacc.CplPhaseOff)
			submit(c, h, 0, sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 0x42}, true, false)
			for range 400 {
				if c.Load16(cq+sacc.CplPhaseOff)&1 == 1 {
					if rmb {
						c.RMB()
					}
					if c.Load32(cq+sacc.CplReqIDOff) != 0x42 {
						n++
					}
					break
				}
				c.Relax()
			}
		}
		return n
	}
	if n := stale(cpu.ARM64, false); n == 0 {
		t.Error("arm64 without rmb never read the body early in 40 seeds")
	}
	for _, tc := range []struct {
		arch cpu.Arch
		rmb  bool
	}{{cpu.X86, false}, {cpu.ARM64, true}, {cpu.X86, true}} {
		if n := stale(tc.arch, tc.rmb); n != 0 {
			t.Errorf("%v, rmb %v: %d stale bodies", tc.arch, tc.rmb, n)
		}
	}
}

// Every buffered store is traced twice: cpu_store when it enters the buffer
// (with how many wait), cpu_write when it lands. Each landing matches one entry,
// and the barrier that empties the buffer says how many it drained.
func TestStoreBufferIsTraced(t *testing.T) {
	for _, arch := range []cpu.Arch{cpu.X86, cpu.ARM64} {
		t.Run(arch.String(), func(t *testing.T) {
			c, h := setup(t, 3, cpu.Config{Arch: arch, MaxLinger: 10_000})
			var buf trace.Buffer
			c.Machine().Tracer().Attach(&buf)
			base := h.SQ + 2*sacc.DescriptorSize
			for i := uint64(0); i < 4; i++ {
				c.Store32(base+4*i, uint32(0x100+i))
			}
			c.WMB()
			type st struct{ addr, val uint64 }
			var entered, landed []st
			var pending []uint64
			drained := uint64(99)
			for _, ev := range buf.Events {
				switch ev.Kind {
				case trace.CPUStore:
					entered = append(entered, st{ev.Args[0], ev.Args[2]})
					pending = append(pending, ev.Args[3])
					if ev.PC == 0 {
						t.Errorf("cpu_store without its source")
					}
				case trace.CPUWrite:
					landed = append(landed, st{ev.Args[0], ev.Args[2]})
				case trace.CPUBarrier:
					drained = ev.Args[1]
				}
			}
			if len(entered) != 4 || len(landed) != 4 {
				t.Fatalf("%d cpu_store and %d cpu_write, want 4 of each", len(entered), len(landed))
			}
			seen := map[st]bool{}
			for _, s := range landed {
				seen[s] = true
			}
			for _, s := range entered {
				if !seen[s] {
					t.Errorf("store %#x=%#x entered the buffer and never landed", s.addr, s.val)
				}
			}
			if arch == cpu.X86 {
				// TSO: each store lands at the end of its own operation.
				if pending[3] != 1 || drained != 0 || landed[0] != entered[0] {
					t.Errorf("x86: pending %v, barrier drained %d, first landed %v", pending, drained, landed[0])
				}
			} else if pending[3] != 4 || drained != 4 {
				t.Errorf("arm64: pending %v, barrier drained %d: want all four waiting for the wmb", pending, drained)
			}
		})
	}
}

// A store that drains into a dirty line of a non-coherent cache reaches no
// memory: it is traced as cpu_store_cached, and cpu_write comes with the clean.
func TestStoreIntoTheCacheIsTraced(t *testing.T) {
	c, h := setup(t, 1, cpu.Config{NonCoherent: true})
	var buf trace.Buffer
	c.Machine().Tracer().Attach(&buf)
	c.Store64(h.SQ, 0xABCD)
	c.CleanRange(h.SQ, 64)
	var kinds []trace.Kind
	for _, ev := range buf.Events {
		kinds = append(kinds, ev.Kind)
	}
	// The line is filled from memory first (a write-allocate cache).
	want := []trace.Kind{trace.CPUStore, trace.CPURead, trace.CPUStoreCached, trace.CPUWrite, trace.CPUCache}
	if len(kinds) != len(want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("events %v, want %v", kinds, want)
		}
	}
}

// regWrites records, in order, the time and value of every SCRATCH write the
// device sees.
func regWrites(c *cpu.CPU) *[][2]uint64 {
	var got [][2]uint64
	c.Machine().Tracer().Attach(trace.Func(func(ev trace.Event) {
		if ev.Kind == trace.RegWrite && ev.Args[0] == sacc.RegSCRATCH {
			got = append(got, [2]uint64{uint64(ev.Time), ev.Args[2]})
		}
	}))
	return &got
}

// TestPostedWriteLandsOneWriteLatencyLater: the CPU pays only for issuing the
// write; the device sees it mmio_write later.
func TestPostedWriteLandsOneWriteLatencyLater(t *testing.T) {
	c, h := setup(t, 1, cpu.Config{})
	cost := c.Machine().Cost()
	got := regWrites(c)
	t0 := c.Now()
	c.Writel(h.BAR0+sacc.RegSCRATCH, 0x5A)
	if d := c.Now() - t0; d != cost.MMIOWriteIssue {
		t.Fatalf("writel took the CPU %d ns, want the issue cost %d", d, cost.MMIOWriteIssue)
	}
	if len(*got) != 0 {
		t.Fatalf("the device saw the write at issue: %v", *got)
	}
	c.Delay(cost.MMIOWrite)
	if len(*got) != 1 || (*got)[0] != [2]uint64{uint64(t0 + cost.MMIOWrite), 0x5A} {
		t.Fatalf("SCRATCH writes %v, want one of 0x5a at %d", *got, t0+cost.MMIOWrite)
	}
}

// TestPostedWritesLandInOrder: back-to-back posted writes reach the device in
// the order the CPU issued them.
func TestPostedWritesLandInOrder(t *testing.T) {
	c, h := setup(t, 1, cpu.Config{})
	got := regWrites(c)
	for v := uint32(1); v <= 4; v++ {
		c.WritelRelaxed(h.BAR0+sacc.RegSCRATCH, v)
	}
	c.Delay(c.Machine().Cost().MMIOWrite)
	if len(*got) != 4 {
		t.Fatalf("SCRATCH writes %v, want 4", *got)
	}
	for i, w := range *got {
		if w[1] != uint64(i+1) || i > 0 && w[0] < (*got)[i-1][0] {
			t.Fatalf("SCRATCH writes %v land out of order", *got)
		}
	}
}

// TestReadAfterWriteSeesTheWrite: a read from the device does not pass an
// earlier posted write to it, so it returns the written value, and the CPU
// stalls for the write's trip and then the read's round trip.
func TestReadAfterWriteSeesTheWrite(t *testing.T) {
	c, h := setup(t, 1, cpu.Config{})
	cost := c.Machine().Cost()
	t0 := c.Now()
	c.Writel(h.BAR0+sacc.RegSCRATCH, 0xC0FFEE)
	if v := c.Readl(h.BAR0 + sacc.RegSCRATCH); v != 0xC0FFEE {
		t.Fatalf("read-back of SCRATCH = %#x, want the value just written", v)
	}
	if want := t0 + cost.MMIOWrite + cost.MMIORead; c.Now() != want {
		t.Fatalf("write then read-back ended at %d ns, want %d (the write's trip, then the round trip)", c.Now(), want)
	}
}
