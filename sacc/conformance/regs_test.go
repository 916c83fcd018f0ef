package conformance

import (
	"testing"

	"github.com/saccbook/saccbook/sacc"
)

// registerFile reads every dword of BAR0 page 0 up to SCRATCH.
func (d *device) registerFile() map[uint32]uint32 {
	d.t.Helper()
	regs := map[uint32]uint32{}
	for off := uint32(0); off < sacc.RegFileEnd; off += 4 {
		regs[off] = d.reg(off)
	}
	return regs
}

// §5 and §7.5: at power-on MAGIC = 0x4A4E524F, VERSION = 1, and every other
// register (CTRL, STATUS, rings, CQ_HEAD, IRQ_STATUS, IRQ_ACK, ERR_CODE, SCRATCH)
// and every reserved offset in between reads 0.
func TestRegisterResetValues(t *testing.T) {
	d := newDevice(t)
	for off, got := range d.registerFile() {
		want := uint32(0)
		switch off {
		case sacc.RegMAGIC:
			want = sacc.MagicValue
		case sacc.RegVERSION:
			want = sacc.VersionValue
		}
		if got != want {
			t.Errorf("%s (0x%02x) at power-on = 0x%08x, want 0x%08x", sacc.RegName(off), off, got, want)
		}
	}
	for _, off := range []uint32{sacc.RegSQTail, sacc.RegCQHeadDB} {
		if got := d.reg(off); got != 0 {
			t.Errorf("%s (0x%04x) at power-on = 0x%08x, want 0", sacc.RegName(off), off, got)
		}
	}
}

// §5: "Reserved offsets read 0 and ignore writes"; §5.1: 0x1008–0x1FFF "reads 0,
// writes ignored". A write there changes no register and is not a doorbell.
func TestReservedOffsetsReadZeroAndIgnoreWrites(t *testing.T) {
	d := newDevice(t)
	before := d.registerFile()
	reserved := []uint32{0x1C, 0x2C, sacc.RegFileEnd, 0x48, 0x100, 0x800, 0xFFC,
		sacc.DoorbellEnd, 0x100C, 0x1800, 0x1FFC}
	for _, off := range reserved {
		d.setReg(off, 0xFFFF_FFFF)
		if got := d.reg(off); got != 0 {
			t.Errorf("reserved offset 0x%04x reads 0x%08x after a write, want 0", off, got)
		}
	}
	d.step(runNS)
	after := d.registerFile()
	for off, v := range before {
		if after[off] != v {
			t.Errorf("%s (0x%02x) changed from 0x%08x to 0x%08x after writes to reserved offsets",
				sacc.RegName(off), off, v, after[off])
		}
	}
}

// §5: "WO registers read 0" — CQ_HEAD, IRQ_ACK, and the doorbell page's SQ_TAIL and
// CQ_HEAD_DB, even right after they were written.
func TestWriteOnlyRegistersReadZero(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.submit(nop(1), nop(2))
	d.run()
	d.take(2)
	checks := []struct {
		off uint32
		v   uint32
	}{{sacc.RegCQHead, 1}, {sacc.RegCQHeadDB, 2}, {sacc.RegIRQAck, 1}, {sacc.RegSQTail, 2}}
	for _, ch := range checks {
		d.setReg(ch.off, ch.v)
		if got := d.reg(ch.off); got != 0 {
			t.Errorf("%s (0x%04x) reads 0x%x after writing %d, want 0", sacc.RegName(ch.off), ch.off, got, ch.v)
		}
	}
	d.step(runNS)
	d.expectRunning()
}

// §5: "Writes to RO registers are ignored" — MAGIC, VERSION, STATUS, IRQ_STATUS and
// ERR_CODE keep their values.
func TestReadOnlyRegistersIgnoreWrites(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.submit(withIRQ(sacc.Descriptor{Opcode: 0x0003, ReqID: 1}))
	d.run()
	d.take(1)
	want := map[uint32]uint32{
		sacc.RegMAGIC:     sacc.MagicValue,
		sacc.RegVERSION:   sacc.VersionValue,
		sacc.RegSTATUS:    sacc.StatusReady,
		sacc.RegIRQStatus: sacc.IRQCompletion,
		sacc.RegErrCode:   uint32(sacc.StatusBadOpcode),
		sacc.RegSCRATCH:   0,
		sacc.RegCTRL:      sacc.CtrlEnable,
		sacc.RegSQSize:    8,
		sacc.RegSQBaseLo:  sqRing,
		sacc.RegCQBaseLo:  cqRing,
		sacc.RegCQSize:    8,
		sacc.RegSQBaseHi:  0,
		sacc.RegCQBaseHi:  0,
		sacc.RegIRQAck:    0,
		sacc.RegCQHead:    0,
	}
	for off, w := range want {
		if got := d.reg(off); got != w {
			t.Fatalf("%s = 0x%x before the test writes, want 0x%x", sacc.RegName(off), got, w)
		}
	}
	for _, off := range []uint32{sacc.RegMAGIC, sacc.RegVERSION, sacc.RegSTATUS, sacc.RegIRQStatus, sacc.RegErrCode} {
		d.setReg(off, 0)
		d.setReg(off, 0xFFFF_FFFF)
		if got := d.reg(off); got != want[off] {
			t.Errorf("RO register %s = 0x%x after writes, want 0x%x", sacc.RegName(off), got, want[off])
		}
	}
	d.expectRunning()
}

// §5: SQ_BASE, SQ_SIZE, CQ_BASE, CQ_SIZE and SCRATCH are RW: with the device not
// enabled they hold what was written, all 32 bits of each half.
func TestReadWriteRegistersHoldValues(t *testing.T) {
	d := newDevice(t)
	values := map[uint32]uint32{
		sacc.RegSQBaseLo: 0x89AB_C000,
		sacc.RegSQBaseHi: 0x0000_0123,
		sacc.RegSQSize:   0x0000_0400,
		sacc.RegCQBaseLo: 0x7654_3000,
		sacc.RegCQBaseHi: 0x0000_00FE,
		sacc.RegCQSize:   0x0000_0040,
		sacc.RegSCRATCH:  0xDEAD_BEEF,
	}
	for off, v := range values {
		d.setReg(off, v)
	}
	for off, v := range values {
		if got := d.reg(off); got != v {
			t.Errorf("%s = 0x%08x, want 0x%08x", sacc.RegName(off), got, v)
		}
	}
	d.setReg(sacc.RegSCRATCH, 0)
	if got := d.reg(sacc.RegSCRATCH); got != 0 {
		t.Errorf("SCRATCH = 0x%x after writing 0", got)
	}
}

// §5 (v1): "64-bit accesses also at 0x10 and 0x20": a 64-bit write there fills both
// halves, and a 64-bit read returns both.
func TestRingBaseRegisters64BitAccess(t *testing.T) {
	d := newDevice(t)
	for _, lo := range []uint32{sacc.RegSQBaseLo, sacc.RegCQBaseLo} {
		v := uint64(0x0000_0012_3456_7000)
		d.writeq(bar0Base+uint64(lo), v)
		if got := d.reg(lo); got != uint32(v) {
			t.Errorf("%s low half = 0x%08x after writeq 0x%x", sacc.RegName(lo), got, v)
		}
		if got := d.reg(lo + 4); got != uint32(v>>32) {
			t.Errorf("%s high half = 0x%08x after writeq 0x%x", sacc.RegName(lo), got, v)
		}
		d.setReg(lo, 0xABCD_E000)
		d.setReg(lo+4, 0x0000_0077)
		if got := d.readq(bar0Base + uint64(lo)); got != 0x0000_0077_ABCD_E000 {
			t.Errorf("readq %s = 0x%x, want 0x00000077abcde000", sacc.RegName(lo), got)
		}
	}
}

// §5 (v1): "Narrower or misaligned accesses: reads return all ones".
func TestNarrowRegisterAccessReadsAllOnes(t *testing.T) {
	d := newDevice(t)
	d.setReg(sacc.RegSCRATCH, 0x1122_3344)
	for _, off := range []uint32{sacc.RegMAGIC, sacc.RegMAGIC + 1, sacc.RegVERSION, sacc.RegSCRATCH, sacc.RegSCRATCH + 3, sacc.RegSQTail} {
		if v := d.readb(bar0Base + uint64(off)); v != 0xFF {
			t.Errorf("readb BAR0+0x%x = 0x%x, want 0xff", off, v)
		}
	}
	for _, off := range []uint32{sacc.RegMAGIC, sacc.RegMAGIC + 2, sacc.RegVERSION, sacc.RegSCRATCH, sacc.RegSCRATCH + 2, sacc.RegSQTail} {
		if v := d.readw(bar0Base + uint64(off)); v != 0xFFFF {
			t.Errorf("readw BAR0+0x%x = 0x%x, want 0xffff", off, v)
		}
	}
	for _, off := range []uint32{sacc.RegMAGIC + 1, sacc.RegMAGIC + 2, sacc.RegSCRATCH + 1, sacc.RegSCRATCH - 2} {
		if v := d.readl(bar0Base + uint64(off)); v != 0xFFFF_FFFF {
			t.Errorf("readl BAR0+0x%x (misaligned) = 0x%x, want 0xffffffff", off, v)
		}
	}
}

// §5 (v1): narrower or misaligned "writes are dropped".
func TestNarrowRegisterWritesAreDropped(t *testing.T) {
	d := newDevice(t)
	d.setReg(sacc.RegSCRATCH, 0x1122_3344)
	d.writeb(bar0Base+sacc.RegSCRATCH, 0xAA)
	d.writeb(bar0Base+sacc.RegSCRATCH+1, 0xAA)
	d.writew(bar0Base+sacc.RegSCRATCH, 0xBBBB)
	d.writew(bar0Base+sacc.RegSCRATCH+2, 0xBBBB)
	d.writel(bar0Base+sacc.RegSCRATCH+2, 0xCCCC_CCCC)
	d.writel(bar0Base+sacc.RegSCRATCH-2, 0xCCCC_CCCC)
	if v := d.reg(sacc.RegSCRATCH); v != 0x1122_3344 {
		t.Errorf("SCRATCH = 0x%08x after narrow and misaligned writes, want 0x11223344", v)
	}

	// A narrow write of CTRL.ENABLE does not enable the device.
	d.programRings(sqRing, 8, cqRing, 8)
	d.writeb(bar0Base+sacc.RegCTRL, sacc.CtrlEnable)
	d.writew(bar0Base+sacc.RegCTRL, sacc.CtrlEnable)
	d.step(10 * enableLatencyNS)
	if v := d.reg(sacc.RegCTRL); v != 0 {
		t.Errorf("CTRL = 0x%x after narrow writes, want 0", v)
	}
	if v := d.reg(sacc.RegSTATUS); v != 0 {
		t.Errorf("STATUS = 0x%x after narrow writes of CTRL, want 0", v)
	}
}

// §5 (v1): the access rules hold on the doorbell page too: a 16- or 8-bit write of
// SQ_TAIL is dropped, so it neither starts work nor counts as a bad doorbell.
func TestNarrowDoorbellWriteIsDropped(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.queue(nop(0x77))
	d.writew(bar0Base+sacc.RegSQTail, 1)
	d.writeb(bar0Base+sacc.RegSQTail, 1)
	d.writew(bar0Base+sacc.RegSQTail, 0xFFFF) // would be out of range, were it a doorbell
	d.run()
	d.expectNoNewCompletion()
	d.expectRunning()

	d.doorbell(1)
	d.run()
	expectCompletion(t, d.take(1)[0], 0x77, sacc.StatusOK, 0)
}

// §5 (v1): "writes to SQ_BASE, SQ_SIZE, CQ_BASE, CQ_SIZE while CTRL.ENABLE = 1 are
// ignored" — from the ENABLE write on, including the enable latency, by 32- and
// 64-bit writes alike. SCRATCH stays writable.
func TestRingRegistersIgnoredWhileEnabled(t *testing.T) {
	d := newDevice(t)
	d.programRings(sqRing, 8, cqRing, 8)
	want := map[uint32]uint32{
		sacc.RegSQBaseLo: sqRing, sacc.RegSQBaseHi: 0, sacc.RegSQSize: 8,
		sacc.RegCQBaseLo: cqRing, sacc.RegCQBaseHi: 0, sacc.RegCQSize: 8,
	}
	tryOverwrite := func(when string) {
		t.Helper()
		for off := range want {
			d.setReg(off, 0x0000_2000)
		}
		d.writeq(bar0Base+sacc.RegSQBaseLo, 0x0000_0001_0004_0000)
		d.writeq(bar0Base+sacc.RegCQBaseLo, 0x0000_0001_0005_0000)
		for off, w := range want {
			if got := d.reg(off); got != w {
				t.Errorf("%s: %s = 0x%x, want 0x%x (write while ENABLE = 1 must be ignored)", when, sacc.RegName(off), got, w)
			}
		}
	}

	d.setReg(sacc.RegCTRL, sacc.CtrlEnable)
	tryOverwrite("during the enable latency")
	d.step(enableLatencyNS)
	d.expectRunning()
	tryOverwrite("while READY")

	d.setReg(sacc.RegSCRATCH, 0x600D)
	if v := d.reg(sacc.RegSCRATCH); v != 0x600D {
		t.Errorf("SCRATCH = 0x%x while enabled, want 0x600d", v)
	}

	// The device still uses the rings it was enabled with.
	cpl := d.submitAndRun(nop(0x51))
	expectCompletion(t, cpl[0], 0x51, sacc.StatusOK, 0)

	// With ENABLE clear the registers take writes again.
	d.setReg(sacc.RegCTRL, 0)
	d.setReg(sacc.RegSQSize, 16)
	if v := d.reg(sacc.RegSQSize); v != 16 {
		t.Errorf("SQ_SIZE = %d after writing 16 with ENABLE clear", v)
	}
}
