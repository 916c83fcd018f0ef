package conformance

import (
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/sacc"
)

// expectCQUntouched checks that no completion was written into the (zeroed) CQ.
func (d *device) expectCQUntouched() {
	d.t.Helper()
	for i := uint32(0); i < d.cqSize; i++ {
		if raw := d.rawCompletion(i); firstDiff(raw, make([]byte, sacc.CompletionSize)) != "" {
			d.t.Fatalf("CQ slot %d = % x, want untouched zeroes", i, raw)
		}
	}
}

// §7.6: "Per-command errors (bad opcode, bad address, bad length) complete that
// command with the error status, set ERR_CODE, and the device goes on with the next
// descriptor. STATUS.ERROR is not set."
func TestPerCommandErrorDoesNotSetStatusError(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	src := uint64(bufBase)
	data := pattern(64, 0x10)
	d.write(src, data)
	cpls := d.submitAndRun(
		sacc.Descriptor{Src: src, Dst: bufBase + 0x1000, Length: 64, Opcode: 0x0007, ReqID: 1},
		memcpyDesc(src, bufBase+0x2000, 64, 2),
		memcpyDesc(src, bufBase+0x3000, 0, 3),
		xformDesc(src, bufBase+0x4000, 64, 4),
	)
	expectCompletion(t, cpls[0], 1, sacc.StatusBadOpcode, 0)
	expectCompletion(t, cpls[1], 2, sacc.StatusOK, 64)
	expectCompletion(t, cpls[2], 3, sacc.StatusBadLength, 0)
	expectCompletion(t, cpls[3], 4, sacc.StatusOK, 64)
	d.expectBytes("command 2's destination", bufBase+0x2000, data)
	d.expectBytes("command 4's destination", bufBase+0x4000, xorBytes(data, sacc.XFORMKey))
	d.expectRunning()
	// §5: ERR_CODE is the "last error code": the bad length, not cleared by the
	// successful command after it.
	if ec := d.reg(sacc.RegErrCode); ec != uint32(sacc.StatusBadLength) {
		t.Errorf("ERR_CODE = %d, want 3 (the last error)", ec)
	}
	// The device keeps going with later doorbells too.
	expectCompletion(t, d.submitAndRun(nop(5))[0], 5, sacc.StatusOK, 0)
}

// §7.6: "a doorbell while not enabled (code 4)" is a device error: ERROR set, READY
// clear, nothing processed.
func TestDoorbellWhileNotEnabledIsError4(t *testing.T) {
	d := newDevice(t)
	d.programRings(sqRing, 8, cqRing, 8)
	d.queue(nop(1))
	d.doorbell(1)
	d.step(runNS)
	d.expectHalted(sacc.StatusNotEnabled)
	d.expectCQUntouched()
}

// §7.6: "'Not enabled' means STATUS.READY = 0, including the enable latency after
// ENABLE is set." A doorbell then halts the device, and READY never comes.
func TestDoorbellDuringEnableLatencyIsError4(t *testing.T) {
	d := newDevice(t)
	d.programRings(sqRing, 8, cqRing, 8)
	d.queue(nop(1))
	d.setReg(sacc.RegCTRL, sacc.CtrlEnable)
	d.step(enableLatencyNS / 2)
	d.doorbell(1)
	d.step(runNS)
	d.expectHalted(sacc.StatusNotEnabled)
	d.expectCQUntouched()
}

// §7.6: "an SQ_TAIL ... value ≥ the ring size (code 5)" is a device error.
func TestDoorbellOutOfRangeIsError5(t *testing.T) {
	for _, tail := range []uint32{8, 9, 0x8000_0000, 0xFFFF_FFFF} {
		t.Run(fmt.Sprint(tail), func(t *testing.T) {
			d := newRunningDevice(t, 8, 8)
			for i := uint32(0); i < 8; i++ {
				d.putDesc(i, nop(i+1))
			}
			d.doorbell(tail)
			d.step(runNS)
			d.expectHalted(sacc.StatusDoorbell)
			d.expectCQUntouched()
		})
	}
}

// §7.6: "an ... CQ_HEAD value ≥ the ring size (code 5)" is a device error, whether
// written at CQ_HEAD or at CQ_HEAD_DB.
func TestCQHeadOutOfRangeIsError5(t *testing.T) {
	for _, reg := range []uint32{sacc.RegCQHead, sacc.RegCQHeadDB} {
		for _, head := range []uint32{4, 5, 0xFFFF_FFFF} {
			t.Run(fmt.Sprintf("%s=%d", sacc.RegName(reg), head), func(t *testing.T) {
				d := newRunningDevice(t, 8, 4)
				d.setReg(reg, head)
				d.step(runNS)
				d.expectHalted(sacc.StatusDoorbell)
			})
		}
	}
}

// §7.6: "A halted device clears READY, ignores doorbells ... and keeps in ERR_CODE
// the code of the error that halted it, until RESET."
func TestHaltedDeviceIgnoresDoorbells(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.setReg(sacc.RegCQHead, 8)
	d.step(1000)
	d.expectHalted(sacc.StatusDoorbell)

	d.submit(nop(1), nop(2)) // a valid doorbell, and READY = 0
	d.step(runNS)
	d.expectCQUntouched()
	d.expectHalted(sacc.StatusDoorbell) // not 4: the halting code is kept
}

// §7.6 and project decision: a halted device "ignores ... CQ_HEAD writes": a stalled
// device that halts does not resume when slots are returned.
func TestHaltedDeviceIgnoresCQHeadWrites(t *testing.T) {
	d := newRunningDevice(t, 8, 4)
	d.submit(nop(1), nop(2), nop(3), nop(4), nop(5))
	d.run()
	d.take(3) // a 4-entry CQ holds 3; two commands wait for space
	d.expectNoNewCompletion()

	d.doorbell(8) // out of range: halt
	d.step(1000)
	d.expectHalted(sacc.StatusDoorbell)

	for _, reg := range []uint32{sacc.RegCQHead, sacc.RegCQHeadDB} {
		d.setReg(reg, 3)
		d.step(runNS)
		d.expectNoNewCompletion()
	}
	d.setReg(sacc.RegCQHead, 0xFFFF_FFFF) // would be another error, were it not ignored
	d.step(1000)
	d.expectHalted(sacc.StatusDoorbell)
}

// §3 (v1) "COMMAND bit 2 clear: the device performs no DMA" and §7.6: "any DMA
// attempt with COMMAND bus-master enable clear" is device error 2. Fetching the
// descriptor is the first DMA, so nothing runs and nothing is posted.
func TestNoDMAWithoutBusMaster(t *testing.T) {
	d := newDevice(t)
	d.setCommand(sacc.CmdMemorySpace)
	d.programRings(sqRing, 8, cqRing, 8)
	d.enable() // enabling takes no DMA
	d.write(bufBase, pattern(64, 6))
	d.memset(bufBase+0x1000, 64, guard)
	d.submit(memcpyDesc(bufBase, bufBase+0x1000, 64, 1))
	d.step(runNS)
	d.expectHalted(sacc.StatusBadAddress)
	d.expectCQUntouched()
	d.expectUntouched("MEMCPY destination", bufBase+0x1000, 64)
}
