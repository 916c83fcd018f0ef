package conformance

import (
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/sacc"
)

// §7.1: "The device processes descriptors strictly in ring order": completions come
// back in submission order, and a chain of copies where each reads what the one
// before wrote ends with the first buffer's contents.
func TestDescriptorsProcessedInRingOrder(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	const n = 256
	a, b, c, e := uint64(bufBase), uint64(bufBase+0x1000), uint64(bufBase+0x2000), uint64(bufBase+0x3000)
	data := pattern(n, 0x42)
	d.write(a, data)
	cpls := d.submitAndRun(
		memcpyDesc(a, b, n, 1),
		xformDesc(b, c, n, 2),
		xformDesc(c, e, n, 3),
		nop(4),
	)
	for i, cpl := range cpls {
		want := uint32(0)
		if i < 3 {
			want = n
		}
		expectCompletion(t, cpl, uint32(i+1), sacc.StatusOK, want)
	}
	d.expectBytes("end of the copy chain", e, data)
}

// §7.2: "The CQ starts zeroed; the expected phase starts at 1 on both sides ... Each
// side inverts its phase each time its index wraps from CQ_SIZE − 1 to 0." The SQ
// wraps too.
func TestPhaseStartsAt1AndFlipsOnWrap(t *testing.T) {
	d := newRunningDevice(t, 4, 4)
	wantPhase := func(slot uint32, phase uint8, reqID uint32) {
		t.Helper()
		cpl := d.completionAt(slot)
		if cpl.Phase != phase || cpl.ReqID != reqID {
			t.Fatalf("CQ slot %d = {req_id %d, phase %d}, want {req_id %d, phase %d}", slot, cpl.ReqID, cpl.Phase, reqID, phase)
		}
	}

	// Lap 1: slots 0–2 with phase 1 (the CQ holds at most 3: one slot stays empty).
	d.submitAndRun(nop(1), nop(2), nop(3))
	wantPhase(0, 1, 1)
	wantPhase(1, 1, 2)
	wantPhase(2, 1, 3)
	wantPhase(3, 0, 0) // still zeroed
	d.returnSlots()

	// Slot 3 finishes lap 1 with phase 1; the CQ index wraps, so slots 0 and 1 get
	// phase 0. (SQ slots 3, 0, 1: the SQ wraps as well.)
	d.submitAndRun(nop(4), nop(5), nop(6))
	wantPhase(3, 1, 4)
	wantPhase(0, 0, 5)
	wantPhase(1, 0, 6)
	d.returnSlots()

	// Lap 2 ends at slot 3; lap 3 starts again with phase 1.
	d.submitAndRun(nop(7), nop(8), nop(9))
	wantPhase(2, 0, 7)
	wantPhase(3, 0, 8)
	wantPhase(0, 1, 9)
	d.expectRunning()
}

// §7.2: "The device writes all other completion fields first and the phase field
// last." Stepping event by event, an entry never shows the new phase with an old or
// partial body.
func TestPhaseWrittenLast(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.memset(cqRing, 8*sacc.CompletionSize, 0)
	d.write(bufBase, pattern(4096, 5))
	descs := []sacc.Descriptor{memcpyDesc(bufBase, bufBase+0x2000, 4096, 0xA1), nop(0xA2), xformDesc(bufBase, bufBase+0x4000, 1000, 0xA3)}
	want := []sacc.Completion{
		{ReqID: 0xA1, ResultLen: 4096, Phase: 1},
		{ReqID: 0xA2, Phase: 1},
		{ReqID: 0xA3, ResultLen: 1000, Phase: 1},
	}
	d.submit(descs...)
	deadline := d.now + runNS
	for steps := 0; ; steps++ {
		for i, w := range want {
			if got := d.completionAt(uint32(i)); got.Phase == 1 && got != w {
				t.Fatalf("at %d ns CQ slot %d shows phase 1 with body %+v, want %+v", d.now, i, got, w)
			}
		}
		reply := d.raw("clock_step")
		if reply == "FAIL no pending events" || steps > 10_000 {
			break
		}
		d.okTimeFromReply(reply)
		if d.now > deadline {
			break
		}
	}
	d.take(3)
}

// okTimeFromReply records the time of an "OK NS" reply obtained with raw.
func (c *client) okTimeFromReply(reply string) {
	c.t.Helper()
	var ns uint64
	if _, err := fmt.Sscanf(reply, "OK %d", &ns); err != nil {
		c.t.Fatalf("clock reply %q is not OK <ns>", reply)
	}
	c.now = ns
}

// cqFullScenario is the §7.3 flow-control check, returning CQ slots through headReg
// (CQ_HEAD or CQ_HEAD_DB). Each command is a MEMCPY to its own buffer, so a test can
// see which commands ran.
func cqFullScenario(t *testing.T, headReg uint32) {
	d := newRunningDevice(t, 8, 4)
	const n = 64
	src := uint64(bufBase)
	dst := func(i int) uint64 { return bufBase + 0x1000 + uint64(i)*0x100 }
	d.write(src, pattern(n, 0x77))
	d.memset(dst(0), 6*0x100, guard)
	var descs []sacc.Descriptor
	for i := range 6 {
		descs = append(descs, memcpyDesc(src, dst(i), n, uint32(100+i)))
	}
	ran := func(i int) bool {
		t.Helper()
		return d.read(dst(i), 1)[0] != guard
	}
	expectRan := func(upTo int) {
		t.Helper()
		for i := range 6 {
			if ran(i) != (i < upTo) {
				t.Fatalf("command %d ran = %v, want commands 0–%d run and no others", i, ran(i), upTo-1)
			}
		}
	}

	// A 4-entry CQ is full after 3 completions; the device stalls and runs nothing
	// it could not complete.
	d.submit(descs...)
	d.run()
	for i, cpl := range d.take(3) {
		expectCompletion(t, cpl, uint32(100+i), sacc.StatusOK, n)
	}
	d.expectNoNewCompletion()
	expectRan(3)
	d.run()
	d.expectNoNewCompletion()
	expectRan(3)
	d.expectRunning()

	// Freeing one slot lets exactly one more complete, into slot 3.
	d.setReg(headReg, 1)
	d.run()
	expectCompletion(t, d.take(1)[0], 103, sacc.StatusOK, n)
	d.expectNoNewCompletion()
	expectRan(4)

	// Freeing up to slot 3 lets the last two complete, after the wrap (phase 0).
	d.setReg(headReg, 3)
	d.run()
	for i, cpl := range d.take(2) {
		expectCompletion(t, cpl, uint32(104+i), sacc.StatusOK, n)
		if cpl.Phase != 0 {
			t.Errorf("completion %d after the wrap has phase %d, want 0", 104+i, cpl.Phase)
		}
	}
	expectRan(6)
	d.expectRunning()
}

// §7.3: "the CQ is full when (cq_tail + 1) mod CQ_SIZE == CQ_HEAD ... When full, the
// device stalls — it fetches no further descriptors — and resumes by itself after a
// CQ_HEAD write frees space ... no command is ever executed without a slot for its
// completion."
func TestCQFullStallsAndResumesOnCQHead(t *testing.T) {
	cqFullScenario(t, sacc.RegCQHead)
}

// §5.1 (v1): CQ_HEAD_DB at 0x1004 has the "same effect as a write to CQ_HEAD".
func TestCQHeadDBSameAsCQHead(t *testing.T) {
	cqFullScenario(t, sacc.RegCQHeadDB)
}

// §7.5 (v1): "READY is set one enable latency (default 2 µs of virtual time) after
// ENABLE is written, never in the same instant".
func TestReadyAfterEnableLatencyNotBefore(t *testing.T) {
	d := newDevice(t)
	d.programRings(sqRing, 8, cqRing, 8)
	d.setReg(sacc.RegCTRL, sacc.CtrlEnable)
	if v := d.reg(sacc.RegCTRL); v&sacc.CtrlEnable == 0 {
		t.Fatalf("CTRL = 0x%x right after writing ENABLE, want bit 0 set", v)
	}
	if st := d.reg(sacc.RegSTATUS); st != 0 {
		t.Fatalf("STATUS = 0x%x in the same instant as the ENABLE write, want 0", st)
	}
	d.step(enableLatencyNS - 1)
	if st := d.reg(sacc.RegSTATUS); st != 0 {
		t.Fatalf("STATUS = 0x%x 1 ns before the enable latency ends, want 0", st)
	}
	d.step(1)
	if st := d.reg(sacc.RegSTATUS); st != sacc.StatusReady {
		t.Fatalf("STATUS = 0x%x once the 2 µs enable latency has passed, want READY (0x1)", st)
	}
}

// §7.5 (v1): "ENABLE is refused (ERROR set, ERR_CODE 6, READY stays 0) unless both
// sizes are powers of two from 2 to 4096 and both bases are 4 KiB aligned."
func TestEnableRefusedForBadRingConfig(t *testing.T) {
	cases := []struct {
		name           string
		sqBase, cqBase uint64
		sqSize, cqSize uint32
	}{
		{"SQ size 0", sqRing, cqRing, 0, 8},
		{"SQ size 1", sqRing, cqRing, 1, 8},
		{"SQ size 3", sqRing, cqRing, 3, 8},
		{"SQ size 12", sqRing, cqRing, 12, 8},
		{"SQ size 8192", sqRing, cqRing, 8192, 8},
		{"SQ size 2^31", sqRing, cqRing, 1 << 31, 8},
		{"CQ size 0", sqRing, cqRing, 8, 0},
		{"CQ size 1", sqRing, cqRing, 8, 1},
		{"CQ size 3", sqRing, cqRing, 8, 3},
		{"CQ size 8192", sqRing, cqRing, 8, 8192},
		{"SQ base misaligned by 0x800", sqRing + 0x800, cqRing, 8, 8},
		{"SQ base misaligned by 0x20", sqRing + 0x20, cqRing, 8, 8},
		{"CQ base misaligned by 0x10", sqRing, cqRing + 0x10, 8, 8},
		{"CQ base misaligned by 0x800", sqRing, cqRing + 0x800, 8, 8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newDevice(t)
			d.programRings(tc.sqBase, tc.sqSize, tc.cqBase, tc.cqSize)
			d.setReg(sacc.RegCTRL, sacc.CtrlEnable)
			d.step(10 * enableLatencyNS)
			d.expectHalted(sacc.StatusRingConfig)
		})
	}
}

// §7.5 (v1): sizes "powers of two from 2 to 4096": both ends of the range enable,
// and the rings work.
func TestEnableAcceptsRingSizes2To4096(t *testing.T) {
	for _, size := range []uint32{2, 4096} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			d := newDevice(t)
			d.programRings(0x40_0000, size, 0x60_0000, size)
			d.enable()
			d.expectRunning()
			if ec := d.reg(sacc.RegErrCode); ec != 0 {
				t.Fatalf("ERR_CODE = %d after a valid enable", ec)
			}
			expectCompletion(t, d.submitAndRun(nop(size))[0], size, sacc.StatusOK, 0)
		})
	}
}

// §7.5 (v1): "clearing ENABLE stops the device and clears READY, IRQ_STATUS and all
// ring state (indices, phases, CQ_HEAD) but keeps the ring registers". Enabled
// again, the device starts from SQ slot 0, CQ slot 0, phase 1 and CQ_HEAD 0.
func TestDisableClearsRingStateKeepsRegisters(t *testing.T) {
	d := newRunningDevice(t, 4, 4)
	d.submitAndRun(withIRQ(nop(1)), nop(2))
	d.returnSlots() // CQ_HEAD = 2
	if v := d.reg(sacc.RegIRQStatus); v != sacc.IRQCompletion {
		t.Fatalf("IRQ_STATUS = 0x%x after an interrupting completion, want 1", v)
	}

	d.setReg(sacc.RegCTRL, 0)
	d.step(1000)
	if st := d.reg(sacc.RegSTATUS); st&sacc.StatusReady != 0 {
		t.Errorf("STATUS = 0x%x after clearing ENABLE, want READY clear", st)
	}
	if v := d.reg(sacc.RegIRQStatus); v != 0 {
		t.Errorf("IRQ_STATUS = 0x%x after clearing ENABLE, want 0", v)
	}
	for off, want := range map[uint32]uint32{sacc.RegSQBaseLo: sqRing, sacc.RegSQBaseHi: 0, sacc.RegSQSize: 4,
		sacc.RegCQBaseLo: cqRing, sacc.RegCQBaseHi: 0, sacc.RegCQSize: 4} {
		if got := d.reg(off); got != want {
			t.Errorf("%s = 0x%x after clearing ENABLE, want 0x%x (kept)", sacc.RegName(off), got, want)
		}
	}

	// As at initialization, the driver hands the device a zeroed CQ.
	d.memset(cqRing, 4*sacc.CompletionSize, 0)
	d.resetRingState()
	d.enable()
	// Three fit only if CQ_HEAD went back to 0; they land in slots 0–2 with phase 1
	// only if the CQ tail and phase were reset; and they are these three only if the
	// SQ head went back to 0.
	for i, cpl := range d.submitAndRun(nop(0x31), nop(0x32), nop(0x33)) {
		expectCompletion(t, cpl, uint32(0x31+i), sacc.StatusOK, 0)
	}
	d.expectRunning()
}

// §7.5 (v1): clearing ENABLE "keeps ... STATUS.ERROR and ERR_CODE".
func TestDisableKeepsErrorAndErrCode(t *testing.T) {
	t.Run("per-command error code", func(t *testing.T) {
		d := newRunningDevice(t, 4, 4)
		d.submitAndRun(sacc.Descriptor{Opcode: 0x0055})
		d.setReg(sacc.RegCTRL, 0)
		d.step(1000)
		if ec := d.reg(sacc.RegErrCode); ec != uint32(sacc.StatusBadOpcode) {
			t.Errorf("ERR_CODE = %d after clearing ENABLE, want 1 (kept)", ec)
		}
	})
	t.Run("device error", func(t *testing.T) {
		d := newRunningDevice(t, 4, 4)
		d.setReg(sacc.RegCQHead, 4)
		d.step(1000)
		d.expectHalted(sacc.StatusDoorbell)
		d.setReg(sacc.RegCTRL, 0)
		d.step(1000)
		d.expectHalted(sacc.StatusDoorbell)
	})
}

// §7.5: "CTRL.RESET ... restores every BAR0 register to its power-on value: CTRL,
// STATUS, rings, CQ_HEAD, IRQ_STATUS, ERR_CODE and SCRATCH become 0"; RESET is
// self-clearing and reads 0. The device is then ready to be reprogrammed.
func TestResetRestoresPowerOnValues(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.setReg(sacc.RegSCRATCH, 0x5C5C_5C5C)
	d.submitAndRun(withIRQ(sacc.Descriptor{Opcode: 0x0042, ReqID: 1}))
	d.returnSlots()
	if d.reg(sacc.RegErrCode) == 0 || d.reg(sacc.RegIRQStatus) == 0 {
		t.Fatalf("setup: ERR_CODE and IRQ_STATUS should be non-zero before the reset")
	}

	d.setReg(sacc.RegCTRL, sacc.CtrlReset)
	for off, got := range d.registerFile() {
		want := uint32(0)
		switch off {
		case sacc.RegMAGIC:
			want = sacc.MagicValue
		case sacc.RegVERSION:
			want = sacc.VersionValue
		}
		if got != want {
			t.Errorf("%s (0x%02x) after RESET = 0x%08x, want 0x%08x", sacc.RegName(off), off, got, want)
		}
	}

	d.memset(cqRing, 8*sacc.CompletionSize, 0)
	d.programRings(sqRing, 8, cqRing, 8)
	d.enable()
	expectCompletion(t, d.submitAndRun(nop(0x2E5E7))[0], 0x2E5E7, sacc.StatusOK, 0)
}

// §7.5: after RESET "Config space and the MSI-X table are untouched."
func TestResetLeavesConfigAndMSIXTable(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.routeVectorsToRAM()
	d.setCommand(sacc.CmdMemorySpace | sacc.CmdBusMaster | sacc.CmdINTxDisable)
	msix := d.findCap(sacc.CapIDMSIX)
	var cfgBefore []uint32
	for reg := uint32(0); reg < sacc.LegacyConfigSpaceSize; reg += 4 {
		cfgBefore = append(cfgBefore, d.cfgRead32(reg))
	}
	tableBefore := d.msixTable()

	d.setReg(sacc.RegCTRL, sacc.CtrlReset)
	d.step(1000)

	for i, reg := 0, uint32(0); reg < sacc.LegacyConfigSpaceSize; i, reg = i+1, reg+4 {
		if got := d.cfgRead32(reg); got != cfgBefore[i] {
			t.Errorf("config dword 0x%02x = 0x%08x after RESET, was 0x%08x", reg, got, cfgBefore[i])
		}
	}
	if ctl := d.cfgRead16(msix + sacc.CapMSIXControlOff); ctl&sacc.MSIXCtrlEnable == 0 {
		t.Errorf("MSI-X enable cleared by RESET (Message Control 0x%04x)", ctl)
	}
	if got := d.msixTable(); got != tableBefore {
		t.Errorf("MSI-X table after RESET = %x, was %x", got, tableBefore)
	}

	// Interrupts still arrive where the untouched table says.
	d.memset(cqRing, 8*sacc.CompletionSize, 0)
	d.programRings(sqRing, 8, cqRing, 8)
	d.enable()
	d.submitAndRun(withIRQ(nop(1)))
	if v := d.mailboxValue(0, false); v != msiData0 {
		t.Errorf("vector 0 after RESET wrote 0x%x, want 0x%x", v, msiData0)
	}
}

// §7.6 and §7.5: a device halted by a device error stays halted "until RESET";
// RESET clears ERROR and ERR_CODE, and the device can be enabled again.
func TestResetRecoversHaltedDevice(t *testing.T) {
	d := newDevice(t)
	d.programRings(sqRing, 8, cqRing, 8)
	d.doorbell(1)
	d.step(1000)
	d.expectHalted(sacc.StatusNotEnabled)

	d.setReg(sacc.RegCTRL, sacc.CtrlReset)
	if st, ec := d.reg(sacc.RegSTATUS), d.reg(sacc.RegErrCode); st != 0 || ec != 0 {
		t.Fatalf("after RESET STATUS = 0x%x, ERR_CODE = %d; want 0, 0", st, ec)
	}
	d.programRings(sqRing, 8, cqRing, 8)
	d.enable()
	expectCompletion(t, d.submitAndRun(nop(9))[0], 9, sacc.StatusOK, 0)
}

// startLongCopy submits a 1 MiB MEMCPY and lets it run for 10 µs: long enough to
// have started, far from done (moving 1 MiB over the link takes hundreds of µs).
func (d *device) startLongCopy() {
	d.t.Helper()
	d.write(bufBase, pattern(4096, 0x1F))
	d.submit(memcpyDesc(bufBase, bufBase+0x20_0000, sacc.MaxLength, 0x10C0))
	d.step(10_000)
	if d.completionAt(0).Phase == 1 {
		d.t.Fatalf("setup: the 1 MiB copy completed within 10 µs")
	}
}

// §7.5: "CTRL.RESET ... aborts active work": a command in flight when RESET is
// written never completes, and nothing it left scheduled disturbs the registers.
func TestResetAbortsActiveWork(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.routeVectorsToRAM()
	d.startLongCopy()
	d.setReg(sacc.RegCTRL, sacc.CtrlReset)
	for range 20 {
		d.run()
	}
	d.expectCQUntouched()
	for off, got := range d.registerFile() {
		if off != sacc.RegMAGIC && off != sacc.RegVERSION && got != 0 {
			t.Errorf("%s = 0x%x 2 ms after RESET, want 0", sacc.RegName(off), got)
		}
	}
	if v := d.mailboxValue(0, false) | d.mailboxValue(1, false); v != 0 {
		t.Errorf("an MSI-X message (0x%x) was sent after RESET", v)
	}
}

// §7.5 (v1): "clearing ENABLE stops the device": a command in flight posts no
// completion afterwards.
func TestDisableStopsActiveWork(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.startLongCopy()
	d.setReg(sacc.RegCTRL, 0)
	for range 20 {
		d.run()
	}
	d.expectCQUntouched()
	if st := d.reg(sacc.RegSTATUS); st != 0 {
		t.Errorf("STATUS = 0x%x 2 ms after clearing ENABLE, want 0", st)
	}
}

// §7.5 (v1): READY follows ENABLE by the enable latency only while ENABLE stays
// set: clearing ENABLE ("clears READY") or RESET during the latency means READY
// never comes.
func TestEnableLatencyCancelledByDisableOrReset(t *testing.T) {
	for _, ctrl := range []uint32{0, sacc.CtrlReset} {
		t.Run(fmt.Sprintf("CTRL=%d", ctrl), func(t *testing.T) {
			d := newDevice(t)
			d.programRings(sqRing, 8, cqRing, 8)
			d.setReg(sacc.RegCTRL, sacc.CtrlEnable)
			d.step(enableLatencyNS / 2)
			d.setReg(sacc.RegCTRL, ctrl)
			d.step(10 * enableLatencyNS)
			if st := d.reg(sacc.RegSTATUS); st != 0 {
				t.Fatalf("STATUS = 0x%x after ENABLE was withdrawn during the latency, want 0", st)
			}
		})
	}
}
