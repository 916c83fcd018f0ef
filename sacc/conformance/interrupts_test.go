package conformance

import (
	"testing"

	"github.com/saccbook/saccbook/sacc"
)

// §9 (v1): "the MSI-X table has 2 entries ... Message Control table-size field reads
// 1 (N − 1)."
func TestMSIXTableSizeReads1(t *testing.T) {
	c := newClient(t)
	capOff := c.findCap(sacc.CapIDMSIX)
	ctl := c.cfgRead16(capOff + sacc.CapMSIXControlOff)
	if n := ctl & sacc.MSIXCtrlTableSizeMask; n != sacc.MSIXVectors-1 {
		t.Fatalf("MSI-X Message Control = 0x%04x: table size field %d, want 1", ctl, n)
	}
}

// §9 (v1): table entry "vector control (+12, bit 0 = mask; masked at power-on)";
// "PBA: one bit per vector, at BAR1 0x800", nothing pending at power-on.
func TestMSIXVectorsMaskedAtPowerOn(t *testing.T) {
	d := newDevice(t)
	for vec := range sacc.MSIXVectors {
		ctl := d.readl(bar1Base + uint64(vec)*sacc.MSIXEntrySize + sacc.MSIXEntryControl)
		if ctl&sacc.MSIXEntryMasked == 0 {
			t.Errorf("MSI-X vector %d control = 0x%x at power-on, want mask bit set", vec, ctl)
		}
	}
	if p := d.pba(); p&3 != 0 {
		t.Errorf("PBA = 0x%x at power-on, want no pending vector", p)
	}
}

// §9 (v1): "Table entry (16 bytes): message address low (+0), message address high
// (+4), message data (+8), vector control (+12)" in BAR1 at offset 0 (§4).
func TestMSIXTableEntriesReadBack(t *testing.T) {
	d := newDevice(t)
	d.setMSIXEntry(0, 0x0000_0001_2345_6780, 0xAAAA_0001, false)
	d.setMSIXEntry(1, 0x0000_0002_3456_7890, 0xBBBB_0002, true)
	want := [8]uint32{0x2345_6780, 1, 0xAAAA_0001, 0, 0x3456_7890, 2, 0xBBBB_0002, 1}
	got := d.msixTable()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("MSI-X table = %x, want %x", got, want)
		}
	}
}

// §9 (v1): "when a completion with the interrupt flag is posted ... the device sets
// [IRQ_STATUS bit 0] and sends vector 0"; §1: an MSI-X message aimed at RAM "simply
// lands in RAM" as a 32-bit write of Message Data.
func TestCompletionInterruptSendsVector0(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.routeVectorsToRAM()
	d.writel(mailboxAddr(0)+4, 0x5EED_5EED) // the message is 32 bits wide
	expectCompletion(t, d.submitAndRun(withIRQ(nop(0x10)))[0], 0x10, sacc.StatusOK, 0)
	if v := d.mailboxValue(0, false); v != msiData0 {
		t.Errorf("vector 0 mailbox = 0x%x, want Message Data 0x%x", v, msiData0)
	}
	if v := d.readl(mailboxAddr(0) + 4); v != 0x5EED_5EED {
		t.Errorf("the word after the vector 0 mailbox = 0x%x: the message was wider than 32 bits", v)
	}
	if v := d.mailboxValue(1, false); v != 0 {
		t.Errorf("vector 1 (device error) mailbox = 0x%x after a successful command, want 0", v)
	}
	if v := d.reg(sacc.RegIRQStatus); v != sacc.IRQCompletion {
		t.Errorf("IRQ_STATUS = 0x%x, want 1", v)
	}
}

// §9 (v1): by the time vector 0 is sent, the completion is posted: a handler woken
// by it finds the entry. Stepped event by event.
func TestCompletionPostedBeforeInterrupt(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.routeVectorsToRAM()
	d.write(bufBase, pattern(8192, 7))
	d.submit(withIRQ(memcpyDesc(bufBase, bufBase+0x4000, 8192, 0x99)))
	deadline := d.now + runNS
	for steps := 0; d.now <= deadline && steps < 10_000; steps++ {
		if d.mailboxValue(0, false) != 0 {
			if cpl := d.completionAt(0); cpl.Phase != 1 || cpl.ReqID != 0x99 {
				t.Fatalf("at %d ns vector 0 has been sent but CQ slot 0 = %+v", d.now, cpl)
			}
			return
		}
		reply := d.raw("clock_step")
		if reply == "FAIL no pending events" {
			break
		}
		d.okTimeFromReply(reply)
	}
	t.Fatalf("vector 0 never sent (mailbox 0x%x)", d.mailboxValue(0, false))
}

// §9: "polling supported by leaving the descriptor's interrupt flag clear" — no
// message, IRQ_STATUS untouched.
func TestNoInterruptWithoutFlag(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.routeVectorsToRAM()
	d.write(bufBase, pattern(32, 1))
	d.submitAndRun(nop(1), memcpyDesc(bufBase, bufBase+0x100, 32, 2), sacc.Descriptor{Opcode: 0x0099, ReqID: 3})
	if v := d.mailboxValue(0, false); v != 0 {
		t.Errorf("vector 0 mailbox = 0x%x for completions without the interrupt flag", v)
	}
	if v := d.reg(sacc.RegIRQStatus); v != 0 {
		t.Errorf("IRQ_STATUS = 0x%x for completions without the interrupt flag", v)
	}
}

// §9 (v1): "if IRQ_STATUS bit 0 is already set, nothing more is sent; otherwise the
// device sets it and sends vector 0. So a handler that acknowledges (IRQ_ACK) before
// it drains the CQ never loses a completion".
func TestCompletionInterruptOnlyWhenIRQStatusClear(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.routeVectorsToRAM()

	d.submitAndRun(withIRQ(nop(1)))
	if v := d.mailboxValue(0, true); v != msiData0 {
		t.Fatalf("first interrupting completion: mailbox 0x%x, want 0x%x", v, msiData0)
	}

	// IRQ_STATUS still set (not acknowledged): the next one sends nothing.
	d.submitAndRun(withIRQ(nop(2)))
	if v := d.mailboxValue(0, false); v != 0 {
		t.Fatalf("a message (0x%x) was sent while IRQ_STATUS was still set", v)
	}
	if v := d.reg(sacc.RegIRQStatus); v != sacc.IRQCompletion {
		t.Fatalf("IRQ_STATUS = 0x%x, want 1", v)
	}

	// The handler acknowledges first, then drains: the next completion interrupts.
	d.setReg(sacc.RegIRQAck, sacc.IRQCompletion)
	d.step(runNS)
	if v := d.mailboxValue(0, false); v != 0 {
		t.Fatalf("IRQ_ACK itself sent a message (0x%x)", v)
	}
	d.submitAndRun(withIRQ(nop(3)))
	if v := d.mailboxValue(0, true); v != msiData0 {
		t.Fatalf("after IRQ_ACK, an interrupting completion sent 0x%x, want 0x%x", v, msiData0)
	}
	if v := d.reg(sacc.RegIRQStatus); v != sacc.IRQCompletion {
		t.Fatalf("IRQ_STATUS = 0x%x, want 1", v)
	}
}

// §5: IRQ_STATUS "bit 0: completion interrupt pending (reading does not clear)";
// IRQ_ACK: "write 1 to bit 0 to clear IRQ_STATUS bit 0".
func TestIRQAckClearsStatus(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.submitAndRun(withIRQ(nop(1)))
	for range 3 {
		if v := d.reg(sacc.RegIRQStatus); v != sacc.IRQCompletion {
			t.Fatalf("IRQ_STATUS = 0x%x on repeated reads, want 1", v)
		}
	}
	d.setReg(sacc.RegIRQAck, 0)
	d.setReg(sacc.RegIRQAck, 0xFFFF_FFFE)
	if v := d.reg(sacc.RegIRQStatus); v != sacc.IRQCompletion {
		t.Fatalf("IRQ_STATUS = 0x%x after IRQ_ACK writes with bit 0 clear, want 1", v)
	}
	d.setReg(sacc.RegIRQAck, sacc.IRQCompletion)
	if v := d.reg(sacc.RegIRQStatus); v != 0 {
		t.Fatalf("IRQ_STATUS = 0x%x after IRQ_ACK 1, want 0", v)
	}
}

// §9 (v1): "A masked vector sets its PBA bit and is sent when unmasked, if still
// pending" — for the completion vector and the device-error vector alike.
func TestMaskedVectorSetsPBAAndSendsOnUnmask(t *testing.T) {
	cases := []struct {
		name  string
		vec   int
		data  uint32
		cause func(d *device)
	}{
		{"vector 0 (completion)", sacc.MSIXVectorComplete, msiData0, func(d *device) { d.submitAndRun(withIRQ(nop(1))) }},
		{"vector 1 (device error)", sacc.MSIXVectorError, msiData1, func(d *device) {
			d.setReg(sacc.RegCQHead, 0xFFFF_FFFF)
			d.step(runNS)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newRunningDevice(t, 8, 8)
			d.setMSIXEntry(sacc.MSIXVectorComplete, mailboxAddr(0), msiData0, true)
			d.setMSIXEntry(sacc.MSIXVectorError, mailboxAddr(1), msiData1, true)
			d.setMSIXControl(true, false)

			tc.cause(d)
			if v := d.mailboxValue(tc.vec, false); v != 0 {
				t.Fatalf("masked vector %d was sent (mailbox 0x%x)", tc.vec, v)
			}
			if p := d.pba(); p&(1<<tc.vec) == 0 {
				t.Fatalf("PBA = 0x%x, want bit %d set for the masked vector", p, tc.vec)
			}

			d.setVectorMask(tc.vec, false)
			d.step(runNS)
			if v := d.mailboxValue(tc.vec, false); v != tc.data {
				t.Fatalf("after unmasking, vector %d mailbox = 0x%x, want 0x%x", tc.vec, v, tc.data)
			}
			if p := d.pba(); p&(1<<tc.vec) != 0 {
				t.Fatalf("PBA = 0x%x after the pending message was sent, want bit %d clear", p, tc.vec)
			}
		})
	}
}

// §9: "MSI-X disabled (Message Control bit 15 clear) ...: no message; IRQ_STATUS
// still works for polling."
func TestMSIXDisabledSendsNothingButIRQStatusWorks(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.setMSIXEntry(sacc.MSIXVectorComplete, mailboxAddr(0), msiData0, false)
	d.setMSIXEntry(sacc.MSIXVectorError, mailboxAddr(1), msiData1, false)
	d.setMSIXControl(false, false)
	d.submitAndRun(withIRQ(nop(1)))
	if v := d.mailboxValue(0, false); v != 0 {
		t.Errorf("MSI-X disabled, yet vector 0 was sent (0x%x)", v)
	}
	if v := d.reg(sacc.RegIRQStatus); v != sacc.IRQCompletion {
		t.Errorf("IRQ_STATUS = 0x%x with MSI-X disabled, want 1", v)
	}
	d.setReg(sacc.RegCQHead, 0xFFFF_FFFF)
	d.step(runNS)
	if v := d.mailboxValue(1, false); v != 0 {
		t.Errorf("MSI-X disabled, yet vector 1 was sent (0x%x)", v)
	}
}

// §9: "MSI-X ... function-masked: no message; IRQ_STATUS still works for polling."
func TestMSIXFunctionMaskedSendsNothingButIRQStatusWorks(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.setMSIXEntry(sacc.MSIXVectorComplete, mailboxAddr(0), msiData0, false)
	d.setMSIXEntry(sacc.MSIXVectorError, mailboxAddr(1), msiData1, false)
	d.setMSIXControl(true, true)
	d.submitAndRun(withIRQ(nop(1)))
	if v := d.mailboxValue(0, false); v != 0 {
		t.Errorf("MSI-X function-masked, yet vector 0 was sent (0x%x)", v)
	}
	if v := d.reg(sacc.RegIRQStatus); v != sacc.IRQCompletion {
		t.Errorf("IRQ_STATUS = 0x%x with MSI-X function-masked, want 1", v)
	}
}

// §7.6 (v1): "Device errors also send MSI-X vector 1, if enabled and unmasked."
func TestDeviceErrorSendsVector1(t *testing.T) {
	cases := []struct {
		name  string
		code  sacc.Status
		cause func(d *device)
	}{
		{"doorbell while not enabled", sacc.StatusNotEnabled, func(d *device) {
			d.programRings(sqRing, 8, cqRing, 8)
			d.doorbell(1)
		}},
		{"SQ_TAIL out of range", sacc.StatusDoorbell, func(d *device) {
			d.programRings(sqRing, 8, cqRing, 8)
			d.enable()
			d.doorbell(8)
		}},
		{"CQ_HEAD out of range", sacc.StatusDoorbell, func(d *device) {
			d.programRings(sqRing, 8, cqRing, 8)
			d.enable()
			d.setReg(sacc.RegCQHead, 8)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newDevice(t)
			d.routeVectorsToRAM()
			tc.cause(d)
			d.step(runNS)
			d.expectHalted(tc.code)
			if v := d.mailboxValue(1, false); v != msiData1 {
				t.Errorf("vector 1 mailbox = 0x%x after a device error, want 0x%x", v, msiData1)
			}
			if v := d.mailboxValue(0, false); v != 0 {
				t.Errorf("vector 0 mailbox = 0x%x after a device error, want 0", v)
			}
		})
	}
}

// §7.6 (v1): a per-command error is not a device error: no vector 1.
func TestPerCommandErrorSendsNoVector1(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.routeVectorsToRAM()
	d.submitAndRun(sacc.Descriptor{Opcode: 0x0004, ReqID: 1}, memcpyDesc(bufBase, bufBase+0x1000, 0, 2))
	if v := d.mailboxValue(1, false); v != 0 {
		t.Errorf("vector 1 mailbox = 0x%x after per-command errors, want 0", v)
	}
}
