package driver_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/host/hosttest"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/trace"
)

// The software-side injection points: the driver's and the kernel's quirks. Each
// test runs one scenario on the driver as written and on the driver with the
// quirk, and checks that the quirk — and only the quirk — shows the symptom the
// bug-hunt catalog (WORKBOOK.md, "Break-it bug hunts") promises the learner.
//
// Three quirks are tested elsewhere, by tests that predate this file:
//   - missing-wmb (catalog 1): TestMissingBarrierShowsOnlyOnARM64 (ordering_test.go);
//   - drain-then-ack (catalog 16): TestDrainThenAckLosesAnInterrupt (ordering_test.go);
//   - ack-without-readback (catalog 16): TestAckThenDrainWithoutReadbackLosesAnInterrupt (ordering_test.go);
//   - map-register-page (catalog 19): TestRegisterPageIsNeverMapped (sacc/user).

// TestQuirkBodyBeforePhase (catalog 2): a driver that loads the completion body
// before the phase can see the device post the entry between the two loads: the
// phase says new, the body is the previous lap's. In slot 0 the previous lap held
// req_id 0 too, so the completion carries the right req_id and the previous lap's
// status. The CPU model performs loads in order, one costed load after another,
// so the window is the time of the body loads; the test searches the length of
// the copy until the device's completion falls into it.
func TestQuirkBodyBeforePhase(t *testing.T) {
	// run fills a 4-entry CQ with bad-opcode completions (lap 1), then copies
	// length bytes: the copy's completion lands in slot 0 with req_id 0 again.
	run := func(on bool, length uint32) *driver.Request {
		h := hosttest.Boot(t, withQuirk(host.Config{Driver: driver.Config{RingSize: 4, Timeout: 50_000}}, quirk.BodyBeforePhase, on))
		src := hosttest.KernelBuffer(t, h, bytes.Repeat([]byte{0x5A}, 4096))
		dst := hosttest.KernelBuffer(t, h, make([]byte, 4096))
		for i := range 4 {
			// Lap 1 reaps each entry only once it has long landed, so it cannot
			// race the device: only the copy below does.
			r := &driver.Request{Opcode: 0x55}
			if err := h.Dev.Submit(r); err != nil {
				t.Fatal(err)
			}
			h.CPU.Delay(20_000)
			if err := h.Dev.Wait(r); r.Status != sacc.StatusBadOpcode || r.ReqID != uint32(i) {
				t.Fatalf("%s: lap 1, request %d: %v %+v", quirkName(quirk.BodyBeforePhase, on), i, err, r)
			}
		}
		r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: length}
		h.Dev.Do(r)
		if !r.Done {
			t.Fatalf("%s: length %d: the copy never completed: %+v", quirkName(quirk.BodyBeforePhase, on), length, r)
		}
		// What the device really posted: the copy's own status.
		var b [sacc.CompletionSize]byte
		h.M.RAM().Read(h.M.Device().State().CQBase, b[:])
		if c := sacc.DecodeCompletion(b[:]); c.ReqID != 0 || c.Status != sacc.StatusOK || c.ResultLen != length || c.Phase != 0 {
			t.Fatalf("length %d: the device posted %+v", length, c)
		}
		return r
	}
	hit := uint32(0)
	for length := uint32(8); length <= 4096 && hit == 0; length += 8 {
		if r := run(true, length); r.Status == sacc.StatusBadOpcode {
			if r.ReqID != 0 {
				t.Fatalf("length %d: stale completion with req_id %d", length, r.ReqID)
			}
			hit = length
		}
	}
	if hit == 0 {
		t.Fatal("no copy length put the device's completion between the body loads and the phase load")
	}
	t.Logf("a %d-byte copy completes between the body loads and the phase load: req_id 0, status %v from the previous lap", hit, sacc.StatusBadOpcode)
	for length := uint32(8); length <= hit; length += 8 {
		if r := run(false, length); r.Status != sacc.StatusOK || r.ResultLen != length {
			t.Fatalf("as specified, length %d: %+v", length, r)
		}
	}
}

// TestQuirkExpectedPhaseZero (catalog 3): the CQ is zeroed, so a driver that
// starts out expecting phase 0 takes every entry for a new completion, all with
// req_id 0, before the device has posted anything.
func TestQuirkExpectedPhaseZero(t *testing.T) {
	for _, on := range []bool{false, true} {
		name := quirkName(quirk.ExpectedPhaseZero, on)
		h := hosttest.Boot(t, withQuirk(host.Config{Driver: driver.Config{RingSize: 4, Timeout: 200_000}}, quirk.ExpectedPhaseZero, on))
		const n = 64 << 10 // long enough that the device is still copying when the driver looks
		src := hosttest.KernelBuffer(t, h, bytes.Repeat([]byte{0xC3}, n))
		dst := hosttest.KernelBuffer(t, h, make([]byte, n))
		r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: n}
		if err := h.Dev.Submit(r); err != nil {
			t.Fatal(err)
		}
		got := h.Dev.Reap()
		posted := h.M.Device().State().CQTail
		if !on {
			if got != 0 || r.Done {
				t.Fatalf("%s: a reap before the device finished consumed %d entries", name, got)
			}
			if err := h.Dev.Wait(r); err != nil || h.M.RAM().Load(dst+n-8, 8) != 0xC3C3C3C3C3C3C3C3 {
				t.Fatalf("%s: the copy failed: %v", name, err)
			}
			continue
		}
		if posted != 0 {
			t.Fatalf("%s: the device had already posted (CQ tail %d); the scenario proves nothing", name, posted)
		}
		if got != 4 || !r.Done || r.ReqID != 0 {
			t.Fatalf("%s: reap consumed %d zeroed entries, request done = %v (req_id %d); want all 4 and done", name, got, r.Done, r.ReqID)
		}
		if h.M.RAM().Load(dst+n-8, 8) != 0 {
			t.Fatalf("%s: the data had already arrived", name)
		}
		if c := strings.Count(hosttest.Dmesg(t, h.K), "completion for unknown req_id 0x0"); c != 3 {
			t.Errorf("%s: %d completions for unknown req_id 0 in dmesg, want 3:\n%s", name, c, hosttest.Dmesg(t, h.K))
		}
	}
}

// TestQuirkNoPhaseFlip (catalog 4): after one lap the driver still expects phase
// 1; the device now writes phase 0. With interrupts the handler never finds the
// new completions: exactly CQ_SIZE requests complete, then everything hangs. The
// stale lap-1 entries still carry phase 1, so the handler that reaps the last
// completion of the lap goes on round the ring through them ("completion for
// unknown req_id") until the reap budget stops it.
//
// Polling shows the other face of the same bug: the poller takes the stale
// entries for new ones and completes requests the device has not run.
func TestQuirkNoPhaseFlip(t *testing.T) {
	const ring = 4
	for _, on := range []bool{false, true} {
		name := quirkName(quirk.NoPhaseFlip, on)
		h := hosttest.Boot(t, withQuirk(host.Config{Driver: driver.Config{RingSize: ring, Interrupts: true, Timeout: 50_000}}, quirk.NoPhaseFlip, on))
		ev := record(h, trace.CQPost)
		completed, err := doUntilFailure(h, 2*ring, true)
		if !on {
			if completed != 2*ring || err != nil {
				t.Fatalf("%s: %d requests completed, then %v", name, completed, err)
			}
			continue
		}
		if completed != ring || !errors.Is(err, driver.ErrTimeout) || h.Dev.Stats.Completed != ring {
			t.Fatalf("%s: %d requests completed (driver count %d), then %v; want %d, then a timeout", name, completed, h.Dev.Stats.Completed, err, ring)
		}
		if posted := ev.count(trace.CQPost); posted != ring+1 {
			t.Errorf("%s: the device posted %d completions, want %d: the one the driver never saw", name, posted, ring+1)
		}
		if !strings.Contains(hosttest.Dmesg(t, h.K), "completion for unknown req_id") {
			t.Errorf("%s: dmesg shows no stale entry consumed:\n%s", name, hosttest.Dmesg(t, h.K))
		}
	}
	// Polling: count the completions the driver reports against those the
	// device posted.
	for _, on := range []bool{false, true} {
		name := quirkName(quirk.NoPhaseFlip, on)
		h := hosttest.Boot(t, withQuirk(host.Config{Driver: driver.Config{RingSize: ring, Timeout: 50_000}}, quirk.NoPhaseFlip, on))
		ev := record(h, trace.CQPost)
		for range 2 * ring {
			h.Dev.Do(&driver.Request{Opcode: sacc.OpNOP})
		}
		posted, reported := ev.count(trace.CQPost), int(h.Dev.Stats.Completed)
		if on != (reported > posted) {
			t.Errorf("%s, polling: the driver reports %d completions, the device posted %d", name, reported, posted)
		}
		if on {
			t.Logf("polling: the driver reports %d completions for %d the device posted", reported, posted)
		}
	}
}

// doUntilFailure runs up to n NOPs one after another and stops at the first that
// fails: how many completed, and the error.
func doUntilFailure(h *host.Host, n int, irq bool) (int, error) {
	for i := range n {
		if err := h.Dev.Do(&driver.Request{Opcode: sacc.OpNOP, IRQ: irq}); err != nil {
			return i, err
		}
	}
	return n, nil
}

// TestQuirkNoCQHead (catalog 5): a driver that never writes CQ_HEAD never gives
// completion slots back, so the device stalls after CQ_SIZE − 1 completions.
func TestQuirkNoCQHead(t *testing.T) {
	const ring = 4
	for _, on := range []bool{false, true} {
		name := quirkName(quirk.NoCQHead, on)
		h := hosttest.Boot(t, withQuirk(host.Config{Driver: driver.Config{RingSize: ring, Timeout: 50_000}}, quirk.NoCQHead, on))
		ev := record(h, trace.CQFull, trace.CQPost)
		completed, err := doUntilFailure(h, 3*ring, false)
		stalled := h.M.Device().State().Stalled
		if !on {
			if completed != 3*ring || err != nil || stalled || ev.count(trace.CQFull) != 0 {
				t.Fatalf("%s: %d completed, then %v; stalled %v", name, completed, err, stalled)
			}
			continue
		}
		if completed != ring-1 || !errors.Is(err, driver.ErrTimeout) || ev.count(trace.CQPost) != ring-1 {
			t.Fatalf("%s: %d completed, then %v; %d posted; want %d, then a timeout", name, completed, err, ev.count(trace.CQPost), ring-1)
		}
		if !stalled || ev.count(trace.CQFull) == 0 {
			t.Fatalf("%s: the device did not stall on a full CQ (stalled %v)", name, stalled)
		}
	}
}

// TestQuirkFullIsTailEqHead (catalog 6): "full" tested as tail == head lets the
// driver fill the last free slot; the tail wraps onto the head, which is how an
// empty ring looks, and the device sees no work: the submissions vanish.
func TestQuirkFullIsTailEqHead(t *testing.T) {
	const ring = 4
	for _, on := range []bool{false, true} {
		name := quirkName(quirk.FullIsTailEqHead, on)
		h := hosttest.Boot(t, withQuirk(host.Config{Driver: driver.Config{RingSize: ring, Timeout: 50_000}}, quirk.FullIsTailEqHead, on))
		ev := record(h, trace.Fetch)
		reqs := make([]*driver.Request, ring)
		for i := range reqs {
			reqs[i] = &driver.Request{Opcode: sacc.OpNOP}
		}
		n, err := h.Dev.SubmitBatch(reqs)
		if !on {
			if n != ring-1 || err != driver.ErrRingFull {
				t.Fatalf("%s: queued %d of %d, %v", name, n, ring, err)
			}
			if err := h.Dev.Wait(reqs[n-1]); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			continue
		}
		if n != ring || err != nil {
			t.Fatalf("%s: queued %d of %d, %v; want the whole ring", name, n, ring, err)
		}
		for i, r := range reqs {
			if err := h.Dev.Wait(r); !errors.Is(err, driver.ErrTimeout) {
				t.Fatalf("%s: request %d: %v, want a timeout", name, i, err)
			}
		}
		if st := h.M.Device().State(); st.SQTail != st.SQHead || ev.count(trace.Fetch) != 0 {
			t.Fatalf("%s: the device saw work: SQ tail %d head %d, %d fetches", name, st.SQTail, st.SQHead, ev.count(trace.Fetch))
		}
	}
}

// TestQuirkDoorbellOutOfRange (catalog 7): the unwrapped tail reaches CQ_SIZE on
// the lap's last submission; the device halts with error 5 and the driver's error
// interrupt resets it, failing what was in flight. Every lap repeats it.
func TestQuirkDoorbellOutOfRange(t *testing.T) {
	const ring = 4
	for _, on := range []bool{false, true} {
		name := quirkName(quirk.DoorbellOutOfRange, on)
		h := hosttest.Boot(t, withQuirk(host.Config{Driver: driver.Config{RingSize: ring, Interrupts: true, Timeout: 50_000}}, quirk.DoorbellOutOfRange, on))
		ev := record(h, trace.DeviceError)
		var failed []int
		for i := range 2 * ring {
			if err := h.Dev.Do(&driver.Request{Opcode: sacc.OpNOP, IRQ: true}); err != nil {
				if !errors.Is(err, driver.ErrDeviceErr) {
					t.Fatalf("%s: request %d: %v", name, i, err)
				}
				failed = append(failed, i)
			}
		}
		if !on {
			if len(failed) != 0 || h.Dev.Stats.Resets != 0 {
				t.Fatalf("%s: requests %v failed, %d resets", name, failed, h.Dev.Stats.Resets)
			}
			continue
		}
		if len(failed) != 2 || failed[0] != ring-1 || failed[1] != 2*ring-1 || h.Dev.Stats.Resets != 2 {
			t.Fatalf("%s: requests %v failed with %d resets; want the last of each lap", name, failed, h.Dev.Stats.Resets)
		}
		if e, ok := ev.first(trace.DeviceError); !ok || e.Args[0] != uint64(sacc.StatusDoorbell) {
			t.Fatalf("%s: device error %v, want %d", name, e.Args[0], sacc.StatusDoorbell)
		}
		if !strings.Contains(hosttest.Dmesg(t, h.K), "ERR_CODE 0x5") {
			t.Errorf("%s: dmesg does not name error 5:\n%s", name, hosttest.Dmesg(t, h.K))
		}
		if st := h.M.Device().State(); st.Status != sacc.StatusReady {
			t.Errorf("%s: the device was not brought back: %+v", name, st)
		}
	}
}

// TestQuirkReqIDReuse (catalog 8): two requests in flight under one req_id: the
// first completion is matched to the second request, and the first request never
// completes.
func TestQuirkReqIDReuse(t *testing.T) {
	for _, on := range []bool{false, true} {
		name := quirkName(quirk.ReqIDReuse, on)
		h := hosttest.Boot(t, withQuirk(host.Config{Driver: driver.Config{Timeout: 50_000}}, quirk.ReqIDReuse, on))
		src := hosttest.KernelBuffer(t, h, bytes.Repeat([]byte{1}, 4096))
		dst := hosttest.KernelBuffer(t, h, make([]byte, 4096))
		a := &driver.Request{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: 4096}
		b := &driver.Request{Opcode: sacc.OpNOP}
		if _, err := h.Dev.SubmitBatch([]*driver.Request{a, b}); err != nil {
			t.Fatal(err)
		}
		errB := h.Dev.Wait(b)
		errA := h.Dev.Wait(a)
		if !on {
			if a.ReqID == b.ReqID || errA != nil || errB != nil || a.ResultLen != 4096 || b.ResultLen != 0 {
				t.Fatalf("%s: a %+v (%v), b %+v (%v)", name, a, errA, b, errB)
			}
			continue
		}
		if a.ReqID != b.ReqID {
			t.Fatalf("%s: req_ids %d and %d differ", name, a.ReqID, b.ReqID)
		}
		if errB != nil || b.ResultLen != a.Length {
			t.Fatalf("%s: the NOP got result_len %d (%v); want the copy's %d", name, b.ResultLen, errB, a.Length)
		}
		if !errors.Is(errA, driver.ErrTimeout) || a.Done {
			t.Fatalf("%s: the copy: %v, done %v; want it lost", name, errA, a.Done)
		}
		if !strings.Contains(hosttest.Dmesg(t, h.K), "completion for unknown req_id 0x0") {
			t.Errorf("%s: the NOP's own completion was not reported as unknown:\n%s", name, hosttest.Dmesg(t, h.K))
		}
	}
}

// TestQuirkSkipBusMaster (catalog 9): without bus mastering the device's first
// DMA, the descriptor fetch, is refused: device error 2, and no byte moves.
func TestQuirkSkipBusMaster(t *testing.T) {
	for _, on := range []bool{false, true} {
		name := quirkName(quirk.SkipBusMaster, on)
		h := hosttest.Boot(t, withQuirk(host.Config{Driver: driver.Config{Timeout: 50_000}}, quirk.SkipBusMaster, on))
		if bm := h.M.Device().Config().BusMaster(); bm == on {
			t.Fatalf("%s: COMMAND bus master = %v after probe", name, bm)
		}
		ev := record(h, trace.DeviceError, trace.DMARead, trace.DMAWrite)
		src := hosttest.KernelBuffer(t, h, bytes.Repeat([]byte{0x77}, 256))
		dst := hosttest.KernelBuffer(t, h, make([]byte, 256))
		err := h.Dev.Do(&driver.Request{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: 256})
		arrived := h.M.RAM().Load(dst, 8) == 0x7777777777777777
		if !on {
			if err != nil || !arrived {
				t.Fatalf("%s: %v, arrived %v", name, err, arrived)
			}
			continue
		}
		if !errors.Is(err, driver.ErrDeviceErr) || !strings.Contains(err.Error(), "ERR_CODE 0x2") {
			t.Fatalf("%s: %v, want device error 2", name, err)
		}
		if e, ok := ev.first(trace.DeviceError); !ok || e.Args[0] != uint64(sacc.StatusBadAddress) {
			t.Fatalf("%s: no device error 2 in the trace", name)
		}
		if arrived || ev.count(trace.DMARead) != 0 || ev.count(trace.DMAWrite) != 0 {
			t.Fatalf("%s: something moved: arrived %v, %d DMA reads, %d DMA writes", name, arrived, ev.count(trace.DMARead), ev.count(trace.DMAWrite))
		}
	}
}

// probeFails boots without the driver, with q if on, then loads the driver: the
// probe must fail exactly when the quirk is on. It returns the host, the guest
// errors of the probe and the probe's error.
func probeFails(t *testing.T, q quirk.Quirk, on bool) (*host.Host, *events, error) {
	t.Helper()
	m := withQuirk(host.Config{NoDriver: true}, q, on)
	h, err := host.Boot(m)
	if err != nil {
		t.Fatal(err)
	}
	ev := record(h, trace.GuestError)
	_, err = driver.Register(h.K, driver.Config{})
	if on != (err != nil) {
		t.Fatalf("%s: driver.Register: %v", quirkName(q, on), err)
	}
	return h, ev, err
}

// TestQuirkSkipMemoryEnable (catalog 10): with memory decoding off nothing answers
// at BAR0: MAGIC reads all ones and the probe says so.
func TestQuirkSkipMemoryEnable(t *testing.T) {
	for _, on := range []bool{false, true} {
		h, ev, err := probeFails(t, quirk.SkipMemoryEnable, on)
		if !on {
			continue
		}
		if !strings.Contains(err.Error(), "bad MAGIC 0xffffffff") || !strings.Contains(err.Error(), "memory decoding") {
			t.Fatalf("probe error %q does not say what is wrong", err)
		}
		if e, ok := ev.first(trace.GuestError); !ok || e.Args[2] != trace.ErrUnmapped {
			t.Fatalf("the MAGIC read did not go to an unmapped address: %+v", e)
		}
		if !strings.Contains(hosttest.Dmesg(t, h.K), "probe failed: bad MAGIC 0xffffffff") {
			t.Errorf("dmesg lacks the probe failure:\n%s", hosttest.Dmesg(t, h.K))
		}
	}
}

// TestQuirkBARSizingNoMask (catalog 11): the firmware leaves the BAR holding the
// sizing pattern instead of the address it printed, so the BAR decodes nowhere in
// the MMIO window and the probe finds no device where the kernel thinks it is.
func TestQuirkBARSizingNoMask(t *testing.T) {
	for _, on := range []bool{false, true} {
		h, _, err := probeFails(t, quirk.BARSizingNoMask, on)
		cfg := h.M.Device().Config()
		bar0 := cfg.Get32(sacc.CfgBAR0)
		if !on {
			if bar0 != sacc.MMIOWindowBase {
				t.Fatalf("as specified: BAR0 = %#x", bar0)
			}
			continue
		}
		if bar0 != sacc.BAR0Mask {
			t.Fatalf("BAR0 = %#x, want the sizing read-back %#x left in place", bar0, sacc.BAR0Mask)
		}
		if !strings.Contains(hosttest.Dmesg(t, h.K), "BAR 0: assigned [mem 0xc0000000-0xc0001fff]") {
			t.Errorf("the kernel should believe BAR0 is assigned:\n%s", hosttest.Dmesg(t, h.K))
		}
		if !strings.Contains(err.Error(), "bad MAGIC 0xffffffff") {
			t.Fatalf("probe error %q", err)
		}
	}
}

// TestQuirkWrongDMADirection (catalog 12): the kernel path maps the destination
// DMA_TO_DEVICE, a read-only IOMMU mapping; the device's write faults with reason
// 2 and the command fails with a bad address.
func TestQuirkWrongDMADirection(t *testing.T) {
	for _, on := range []bool{false, true} {
		name := quirkName(quirk.WrongDMADirection, on)
		h := hosttest.Boot(t, withQuirk(host.Config{Kernel: kernel.Config{IOMMU: true}}, quirk.WrongDMADirection, on))
		u := newUserCopy(t, h, 512)
		status, err := u.run(0x3C)
		faults := faultLog(h)
		if !on {
			if err != nil || status != sacc.StatusOK || !u.arrived(0x3C) || len(faults) != 0 {
				t.Fatalf("%s: %v %v, faults %+v", name, status, err, faults)
			}
			continue
		}
		if status != sacc.StatusBadAddress || err == nil || u.arrived(0x3C) {
			t.Fatalf("%s: status %v, %v", name, status, err)
		}
		if len(faults) != 1 {
			t.Fatalf("%s: fault log %+v, want one record", name, faults)
		}
		f := faults[0]
		if f.Reason != sacc.FaultWriteDenied || f.Access != sacc.AccessWrite || f.IOVA < kernel.IOVABase ||
			f.SourceID != sacc.SourceID(sacc.SACCBus, sacc.SACCDevice, sacc.SACCFunction) {
			t.Fatalf("%s: fault record %+v, want a write denied (reason 2) by 00:03.0", name, f)
		}
	}
}

// TestQuirkUnmapWhileInUse (catalog 13): the kernel path unmaps the destination
// right after ringing the doorbell, while the command is still queued. With
// strict invalidation the device's write faults (not present) and no byte lands.
//
// The catalog's other half — with lazy invalidation the device writes the
// unmapped, unpinned buffer through a stale IOTLB entry — cannot happen in this
// model, and the test pins down what happens instead: the same fault. The device
// translates a whole command before it moves a byte (§6.3), and the early unmap
// clears the page-table entry before the device's first translation of the
// destination; the only IOTLB entry that could carry the write is one left by an
// earlier use of the same IOVA, and lazy mode does not hand an IOVA out again
// until the flush that kills such entries. So even with the IOTLB warm from an
// earlier copy of the very same buffers, the lazy run maps the destination at a
// fresh IOVA and faults on it.
func TestQuirkUnmapWhileInUse(t *testing.T) {
	const n = 256
	for _, lazy := range []bool{false, true} {
		for _, on := range []bool{false, true} {
			name := quirkName(quirk.UnmapWhileInUse, on) + map[bool]string{false: ", strict", true: ", lazy"}[lazy]
			h := hosttest.Boot(t, withQuirk(host.Config{Kernel: kernel.Config{IOMMU: true, LazyUnmap: lazy}}, quirk.UnmapWhileInUse, on))
			u := newUserCopy(t, h, n)
			// An earlier copy of the same buffers, through the DMA API the way the
			// kernel path does it without the bug, warms the IOTLB.
			pd := h.Dev.PCI()
			ssg, _ := u.p.PinUserPages(u.src, n)
			dsg, _ := u.p.PinUserPages(u.dst, n)
			if _, err := pd.DMAMapSG(ssg, kernel.DMAToDevice); err != nil {
				t.Fatal(err)
			}
			if _, err := pd.DMAMapSG(dsg, kernel.DMAFromDevice); err != nil {
				t.Fatal(err)
			}
			warmIOVA := dsg[0].DMAAddr
			if err := h.Dev.Do(&driver.Request{Opcode: sacc.OpMEMCPY, Src: ssg[0].DMAAddr, Dst: warmIOVA, Length: n}); err != nil {
				t.Fatal(err)
			}
			pd.DMAUnmapSG(dsg, kernel.DMAFromDevice)
			pd.DMAUnmapSG(ssg, kernel.DMAToDevice)
			u.p.UnpinUserPages(dsg)
			u.p.UnpinUserPages(ssg)

			// Watch the device's writes to dst: is the IOVA still mapped when one
			// lands?
			dstPhys := u.dstPhys(t)
			writes, unmapped := 0, 0
			h.M.Tracer().Attach(trace.Func(func(ev trace.Event) {
				if ev.Kind == trace.DMAWrite && ev.Args[1] == dstPhys {
					writes++
					if steps := h.M.IOMMU().Walk(ev.Args[0]); len(steps) < sacc.IOPTLevels || !steps[len(steps)-1].Entry.Present() {
						unmapped++
					}
				}
			}))
			status, err := u.run(0x99)
			faults := faultLog(h)
			if !on {
				if err != nil || status != sacc.StatusOK || !u.arrived(0x99) || len(faults) != 0 || writes != 1 || unmapped != 0 {
					t.Fatalf("%s: %v %v, %d writes (%d while unmapped), faults %+v", name, status, err, writes, unmapped, faults)
				}
				continue
			}
			if status != sacc.StatusBadAddress || err == nil || u.arrived(0x99) || writes != 0 {
				t.Fatalf("%s: %v %v, %d writes to the unmapped buffer", name, status, err, writes)
			}
			if len(faults) != 1 || faults[0].Reason != sacc.FaultNotPresent || faults[0].Access != sacc.AccessWrite {
				t.Fatalf("%s: fault log %+v, want one not-present write", name, faults)
			}
			// Strict mode reuses the warm IOVA at once (and invalidated it);
			// lazy mode holds it back until its flush, so the fault is on a fresh one.
			if reused := faults[0].IOVA == warmIOVA; reused == lazy {
				t.Fatalf("%s: the fault is at %#x, the warm-up's destination was %#x", name, faults[0].IOVA, warmIOVA)
			}
			if u.p.Pinned() != 0 {
				t.Errorf("%s: %d pages left pinned", name, u.p.Pinned())
			}
		}
	}
}

// TestQuirkFirstPageOnly (catalog 14): dma_map_single maps only the first page of
// a buffer that crosses a page boundary; the device faults on the second page. A
// buffer inside one page still works.
func TestQuirkFirstPageOnly(t *testing.T) {
	for _, on := range []bool{false, true} {
		name := quirkName(quirk.FirstPageOnly, on)
		h := hosttest.Boot(t, withQuirk(host.Config{Kernel: kernel.Config{IOMMU: true}}, quirk.FirstPageOnly, on))
		pd := h.Dev.PCI()
		copyOf := func(length uint64) (*driver.Request, uint64, error) {
			src := hosttest.KernelBuffer(t, h, bytes.Repeat([]byte{0xE1}, int(length)))
			dst := hosttest.KernelBuffer(t, h, make([]byte, length))
			s, err := pd.DMAMapSingle(src, length, kernel.DMAToDevice)
			if err != nil {
				t.Fatal(err)
			}
			d, err := pd.DMAMapSingle(dst, length, kernel.DMAFromDevice)
			if err != nil {
				t.Fatal(err)
			}
			r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: s, Dst: d, Length: uint32(length)}
			err = h.Dev.Do(r)
			pd.DMAUnmapSingle(d, length, kernel.DMAFromDevice)
			pd.DMAUnmapSingle(s, length, kernel.DMAToDevice)
			return r, s, err
		}
		if r, _, err := copyOf(sacc.PageSize); err != nil {
			t.Fatalf("%s: a one-page buffer: %v %+v", name, err, r)
		}
		r, srcIOVA, err := copyOf(2 * sacc.PageSize)
		faults := faultLog(h)
		if !on {
			if err != nil || len(faults) != 0 {
				t.Fatalf("%s: a two-page buffer: %v, faults %+v", name, err, faults)
			}
			continue
		}
		if r.Status != sacc.StatusBadAddress {
			t.Fatalf("%s: a two-page buffer: %v %+v", name, err, r)
		}
		if len(faults) != 1 || faults[0].IOVA != srcIOVA+sacc.PageSize || faults[0].Reason != sacc.FaultNotPresent {
			t.Fatalf("%s: fault log %+v, want one not-present fault at the second page %#x", name, faults, srcIOVA+sacc.PageSize)
		}
	}
}

// TestQuirkNoIOTLBInvalidate (catalog 15): the kernel unmaps a buffer, the IOVA
// is handed to a new buffer, and without an invalidation the IOTLB still
// translates it to the old one: the device writes the old buffer.
func TestQuirkNoIOTLBInvalidate(t *testing.T) {
	for _, on := range []bool{false, true} {
		name := quirkName(quirk.NoIOTLBInvalidate, on)
		h := hosttest.Boot(t, withQuirk(host.Config{Kernel: kernel.Config{IOMMU: true}}, quirk.NoIOTLBInvalidate, on))
		pd := h.Dev.PCI()
		src := hosttest.KernelBuffer(t, h, bytes.Repeat([]byte{0x11}, 64))
		old := hosttest.KernelBuffer(t, h, make([]byte, 64))
		fresh := hosttest.KernelBuffer(t, h, make([]byte, 64))
		s, _ := pd.DMAMapSingle(src, 64, kernel.DMAToDevice)
		d1, _ := pd.DMAMapSingle(old, 64, kernel.DMAFromDevice)
		if err := h.Dev.Do(&driver.Request{Opcode: sacc.OpMEMCPY, Src: s, Dst: d1, Length: 64}); err != nil {
			t.Fatal(err)
		}
		pd.DMAUnmapSingle(d1, 64, kernel.DMAFromDevice)
		d2, _ := pd.DMAMapSingle(fresh, 64, kernel.DMAFromDevice)
		if d2 != d1 {
			t.Fatalf("the IOVA was not reused (%#x, then %#x): the scenario needs it", d1, d2)
		}
		h.M.RAM().Fill(src, 64, 0x22)
		if err := h.Dev.Do(&driver.Request{Opcode: sacc.OpMEMCPY, Src: s, Dst: d2, Length: 64}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		gotFresh, gotOld := h.M.RAM().Load(fresh, 8), h.M.RAM().Load(old, 8)
		if on {
			if gotFresh != 0 || gotOld != 0x2222222222222222 {
				t.Fatalf("%s: new buffer %#x, old buffer %#x; want the stale translation to hit the old one", name, gotFresh, gotOld)
			}
			continue
		}
		if gotFresh != 0x2222222222222222 || gotOld != 0x1111111111111111 {
			t.Fatalf("%s: new buffer %#x, old buffer %#x", name, gotFresh, gotOld)
		}
	}
}

// TestQuirkVectorLeftMasked (catalog 18): the completion vector is never
// unmasked: the device parks the interrupt in the PBA, no interrupt arrives, and
// a request waiting for one times out with its completion sitting in the CQ.
func TestQuirkVectorLeftMasked(t *testing.T) {
	for _, on := range []bool{false, true} {
		name := quirkName(quirk.VectorLeftMasked, on)
		h := hosttest.Boot(t, withQuirk(host.Config{Driver: driver.Config{Interrupts: true, Timeout: 50_000}}, quirk.VectorLeftMasked, on))
		err := h.Dev.Do(&driver.Request{Opcode: sacc.OpNOP, IRQ: true})
		st := h.M.Device().State()
		if !on {
			if err != nil || st.PBA != 0 || h.Dev.Stats.Interrupts == 0 {
				t.Fatalf("%s: %v, PBA %#x, %d interrupts", name, err, st.PBA, h.Dev.Stats.Interrupts)
			}
			continue
		}
		if !errors.Is(err, driver.ErrTimeout) {
			t.Fatalf("%s: %v, want a timeout", name, err)
		}
		if st.PBA&(1<<sacc.MSIXVectorComplete) == 0 || !st.MSIX[sacc.MSIXVectorComplete].Masked() || h.Dev.Stats.Interrupts != 0 {
			t.Fatalf("%s: PBA %#x, entry masked %v, %d interrupts", name, st.PBA, st.MSIX[sacc.MSIXVectorComplete].Masked(), h.Dev.Stats.Interrupts)
		}
		if n := h.Dev.Reap(); n != 1 {
			t.Fatalf("%s: the completion should be waiting in the CQ; a poll found %d", name, n)
		}
	}
}

// TestQuirkWrongWidth (catalog 20): 16-bit register accesses are not accepted by
// the device: a read returns all ones, so the probe fails at MAGIC, and a write
// is dropped.
func TestQuirkWrongWidth(t *testing.T) {
	for _, on := range []bool{false, true} {
		h, ev, err := probeFails(t, quirk.WrongWidth, on)
		if !on {
			if n := ev.count(trace.GuestError); n != 0 {
				t.Fatalf("as specified: %d guest errors", n)
			}
			continue
		}
		if !strings.Contains(err.Error(), "bad MAGIC 0xffff ") {
			t.Fatalf("probe error %q, want MAGIC read as 16 bits of ones", err)
		}
		e, ok := ev.first(trace.GuestError)
		if !ok || e.Args[2] != trace.ErrWidth || e.Args[1] != 2 {
			t.Fatalf("no 16-bit access refused in the trace: %+v", e)
		}
		// What the driver's writes meet: with decoding on, a 16-bit write to
		// SCRATCH is dropped where a 32-bit one lands.
		pdev := h.K.Devices()[0]
		if err := pdev.EnableDevice(); err != nil {
			t.Fatal(err)
		}
		h.CPU.Writew(pdev.BAR[0].Start+sacc.RegSCRATCH, 0x1234)
		h.CPU.Delay(h.M.Cost().MMIOWrite) // posted: let it land
		if s := h.M.Device().State().Scratch; s != 0 {
			t.Fatalf("a 16-bit write reached SCRATCH: %#x", s)
		}
		h.CPU.Writel(pdev.BAR[0].Start+sacc.RegSCRATCH, 0x1234)
		h.CPU.Delay(h.M.Cost().MMIOWrite)
		if s := h.M.Device().State().Scratch; s != 0x1234 {
			t.Fatalf("a 32-bit write did not reach SCRATCH: %#x", s)
		}
	}
}

// softwareQuirkTests names the test of every driver- and kernel-side quirk. A
// test in this package is named by its function, so the list cannot name a test
// that does not exist; a test in another package by its file and name.
var softwareQuirkTests = map[quirk.Quirk]struct {
	fn        func(*testing.T)
	file, def string // for a test in another package
}{
	quirk.MissingWMB:         {fn: TestMissingBarrierShowsOnlyOnARM64},
	quirk.BodyBeforePhase:    {fn: TestQuirkBodyBeforePhase},
	quirk.ExpectedPhaseZero:  {fn: TestQuirkExpectedPhaseZero},
	quirk.NoPhaseFlip:        {fn: TestQuirkNoPhaseFlip},
	quirk.NoCQHead:           {fn: TestQuirkNoCQHead},
	quirk.FullIsTailEqHead:   {fn: TestQuirkFullIsTailEqHead},
	quirk.DoorbellOutOfRange: {fn: TestQuirkDoorbellOutOfRange},
	quirk.ReqIDReuse:         {fn: TestQuirkReqIDReuse},
	quirk.SkipBusMaster:      {fn: TestQuirkSkipBusMaster},
	quirk.SkipMemoryEnable:   {fn: TestQuirkSkipMemoryEnable},
	quirk.BARSizingNoMask:    {fn: TestQuirkBARSizingNoMask},
	quirk.WrongDMADirection:  {fn: TestQuirkWrongDMADirection},
	quirk.UnmapWhileInUse:    {fn: TestQuirkUnmapWhileInUse},
	quirk.FirstPageOnly:      {fn: TestQuirkFirstPageOnly},
	quirk.NoIOTLBInvalidate:  {fn: TestQuirkNoIOTLBInvalidate},
	quirk.DrainThenAck:       {fn: TestDrainThenAckLosesAnInterrupt},
	quirk.VectorLeftMasked:   {fn: TestQuirkVectorLeftMasked},
	quirk.MapRegisterPage:    {file: "../user/user_test.go", def: "func TestRegisterPageIsNeverMapped("},
	quirk.WrongWidth:         {fn: TestQuirkWrongWidth},
	quirk.MissingRMB:         {fn: TestQuirkMissingRMB},
	quirk.AckWithoutReadback: {fn: TestAckThenDrainWithoutReadbackLosesAnInterrupt},
}

// TestEverySoftwareQuirkIsTested keeps this file in step with the quirk list: a
// new driver- or kernel-side quirk fails here until it has a test.
func TestEverySoftwareQuirkIsTested(t *testing.T) {
	for _, q := range quirk.All() {
		if q.Side != quirk.SideDriver && q.Side != quirk.SideKernel {
			continue
		}
		e, ok := softwareQuirkTests[q.Quirk]
		switch {
		case !ok:
			t.Errorf("quirk %s (catalog %d) has no test", q.Name, q.Hunt)
		case e.fn == nil:
			src, err := os.ReadFile(e.file)
			if err != nil || !strings.Contains(string(src), e.def) {
				t.Errorf("quirk %s: %s has no %q (%v)", q.Name, e.file, e.def, err)
			}
		}
	}
	for q := range softwareQuirkTests {
		if s := q.Info().Side; s != quirk.SideDriver && s != quirk.SideKernel {
			t.Errorf("quirk %s is %s-side, not software", q, s)
		}
	}
}

// TestQuirkMissingRMB (catalog 2, the barrier form): with no rmb between the
// phase check and the body, an arm64 CPU may perform the body loads first and
// pair this lap's phase with last lap's body. x86 keeps loads in order, and with
// the rmb arm64 does too.
func TestQuirkMissingRMB(t *testing.T) {
	run := func(arch cpu.Arch, bug bool, seed uint64, length uint32) *driver.Request {
		cfg := withQuirk(host.Config{Driver: driver.Config{RingSize: 4, Timeout: 50_000}}, quirk.MissingRMB, bug)
		cfg.CPU.Arch = arch
		cfg.Machine.Seed = seed
		h := hosttest.Boot(t, cfg)
		src := hosttest.KernelBuffer(t, h, bytes.Repeat([]byte{0x5A}, 4096))
		dst := hosttest.KernelBuffer(t, h, make([]byte, 4096))
		for range 4 { // lap 1: four bad-opcode completions
			h.Dev.Do(&driver.Request{Opcode: 0x55})
		}
		r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: length}
		h.Dev.Do(r)
		return r
	}
	stale := func(r *driver.Request) bool { return r.Done && r.Status == sacc.StatusBadOpcode }
	hit := false
	var seed uint64
	var length uint32
	for seed = 1; seed <= 8 && !hit; seed++ {
		for length = 8; length <= 1024 && !hit; length += 24 {
			hit = stale(run(cpu.ARM64, true, seed, length))
		}
	}
	if !hit {
		t.Fatal("no seed and length made arm64 read the body before the phase without rmb")
	}
	seed, length = seed-1, length-24
	t.Logf("arm64, seed %d, a %d-byte copy: the body was read early and carried last lap's status", seed, length)
	if r := run(cpu.X86, true, seed, length); stale(r) {
		t.Errorf("x86 without rmb read a stale body: %+v", r)
	}
	if r := run(cpu.ARM64, false, seed, length); stale(r) || r.Status != sacc.StatusOK {
		t.Errorf("arm64 with rmb: %+v", r)
	}
}

// The driver_cq tracepoint shows what only the driver knows: after each
// completion it consumes, the slot it looks at next and the phase it expects
// there. As specified the phase flips when the head wraps; under no-phase-flip
// it does not, and the trace says so.
func TestDriverCQTracepoint(t *testing.T) {
	const ring = 4
	for _, on := range []bool{false, true} {
		name := quirkName(quirk.NoPhaseFlip, on)
		h := hosttest.Boot(t, withQuirk(host.Config{Driver: driver.Config{RingSize: ring, Timeout: 50_000}}, quirk.NoPhaseFlip, on))
		ev := record(h, trace.DriverCQ)
		for range ring + 1 {
			h.Dev.Do(&driver.Request{Opcode: sacc.OpNOP})
		}
		if len(ev.evs) < ring {
			t.Fatalf("%s: %d driver_cq events for %d completions", name, len(ev.evs), ring+1)
		}
		for i, e := range ev.evs[:ring] {
			head, phase := e.Args[0], e.Args[1]
			wantPhase := uint64(1)
			if i == ring-1 && !on {
				wantPhase = 0 // the head wrapped to 0: the next lap carries phase 0
			}
			if head != uint64(i+1)%ring || phase != wantPhase {
				t.Errorf("%s: driver_cq %d = head %d phase %d, want head %d phase %d", name, i, head, phase, (i+1)%ring, wantPhase)
			}
			if e.PC == 0 {
				t.Errorf("%s: driver_cq without the driver's source line", name)
			}
		}
	}
}
