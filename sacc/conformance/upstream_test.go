package conformance

import (
	"bytes"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/profile"
	"github.com/saccbook/saccbook/sacc/qtest"
)

// The upstream-v0.1 profile: the device as upstream's own QEMU model behaves,
// driven through qtest exactly as the rest of this suite drives v1 (in-process, or
// "$SACC_QTEST_BIN qtest --profile upstream-v0.1"). Each test is one row of
// docs/SPEC.md, "Upstream v0.1 and v1: every difference"; where it helps, the
// same steps on a v1 machine show the other side. The v1 suite is untouched.

const upstream = profile.UpstreamV01Name

// newUpstreamDevice does the firmware's job on an upstream device: it has BAR0
// only, so only BAR0 is sized and assigned.
func newUpstreamDevice(t testing.TB) *device {
	t.Helper()
	d := &device{client: newProfileClient(t, upstream)}
	d.assignBAR(sacc.CfgBAR0, bar0Base)
	d.setCommand(sacc.CmdMemorySpace | sacc.CmdBusMaster)
	return d
}

// newUpstreamRings programs rings at sqRing and cqRing and, as upstream's driver
// does, never sets CTRL.ENABLE.
func newUpstreamRings(t testing.TB, sqSize, cqSize uint32) *device {
	t.Helper()
	d := newUpstreamDevice(t)
	d.programRings(sqRing, sqSize, cqRing, cqSize)
	return d
}

func TestUpstreamIdentityHasQEMUsSubsystemIDs(t *testing.T) {
	up, v1 := newProfileClient(t, upstream), newClient(t)
	for _, reg := range []uint32{sacc.CfgVendorID, sacc.CfgRevision} {
		if a, b := up.cfgRead32(reg), v1.cfgRead32(reg); a != b {
			t.Errorf("config 0x%02x: upstream 0x%08x, v1 0x%08x: want the same", reg, a, b)
		}
	}
	if got, want := up.cfgRead32(sacc.CfgSubsystemVID), uint32(sacc.UpstreamSubsystemID)<<16|sacc.UpstreamSubsystemVendorID; got != want {
		t.Errorf("upstream subsystem dword 0x%08x, want 0x%08x (QEMU's 1af4:1100)", got, want)
	}
	if got, want := v1.cfgRead32(sacc.CfgSubsystemVID), uint32(sacc.SubsystemID)<<16|sacc.SubsystemVendorID; got != want {
		t.Errorf("v1 subsystem dword 0x%08x, want 0x%08x", got, want)
	}
}

func TestUpstreamHasNoMSIXAndNoBAR1(t *testing.T) {
	c := newProfileClient(t, upstream)
	caps := c.capabilities()
	if len(caps) != 1 || caps[0].offset != sacc.CfgPCIeCapOffset || caps[0].id != sacc.CapIDPCIe {
		t.Fatalf("capabilities %+v, want the PCIe capability at 0x40 alone", caps)
	}
	if next := c.cfgRead8(sacc.CfgPCIeCapOffset + sacc.CapNextOffset); next != 0 {
		t.Errorf("the PCIe capability's next pointer is 0x%02x, want 0 (v1: MSI-X at 0x80)", next)
	}
	if got := c.cfgRead32(sacc.UpstreamMSIXCapOffsetQEMU); got != 0 {
		t.Errorf("config 0x%02x, where QEMU would place an MSI-X capability, reads 0x%08x; want 0", sacc.UpstreamMSIXCapOffsetQEMU, got)
	}
	c.cfgWrite32(sacc.CfgBAR1, 0xFFFF_FFFF)
	if got := c.cfgRead32(sacc.CfgBAR1); got != 0 {
		t.Errorf("BAR1 sizes as 0x%08x, want 0: upstream's device has no BAR1", got)
	}
	if v1 := newClient(t).findCap(sacc.CapIDMSIX); v1 != sacc.CfgMSIXCapOffset {
		t.Errorf("v1's MSI-X capability at 0x%02x, want 0x%02x", v1, sacc.CfgMSIXCapOffset)
	}
}

func TestUpstreamLinkIsX1At2_5GTs(t *testing.T) {
	c := newProfileClient(t, upstream)
	at := uint32(sacc.CfgPCIeCapOffset)
	cases := []struct {
		name string
		got  uint32
		want uint32
	}{
		{"flags (v2, endpoint)", uint32(c.cfgRead16(at + sacc.CapPCIeFlagsOff)), sacc.PCIeCapVersion | sacc.PCIeDevTypeEP<<4},
		{"Device Capabilities", c.cfgRead32(at + sacc.CapPCIeDevCapOff), sacc.PCIeDevCapRBER},
		{"Device Capabilities 2", c.cfgRead32(at + sacc.CapPCIeDevCap2Off), sacc.PCIeDevCap2EFF | sacc.PCIeDevCap2EETLPP},
		{"Link Capabilities", c.cfgRead32(at + sacc.CapPCIeLinkCapOff), 0x411}, // 2.5 GT/s, x1, ASPM L0s, port 0
		{"Link Status", uint32(c.cfgRead16(at + sacc.CapPCIeLinkStaOff)), 0x11},
		{"Link Capabilities 2", c.cfgRead32(at + sacc.CapPCIeLinkCap2), 0},
	}
	for _, cs := range cases {
		if cs.got != cs.want {
			t.Errorf("%s = 0x%x, want 0x%x", cs.name, cs.got, cs.want)
		}
	}
}

// TestUpstreamTakesADoorbellWithoutEnable: the rings programmed, CTRL never
// written, one NOP: upstream completes it inside the doorbell write, before any
// virtual time passes; v1 halts with device error 4.
func TestUpstreamTakesADoorbellWithoutEnable(t *testing.T) {
	d := newUpstreamRings(t, 8, 8)
	d.submit(withIRQ(nop(1)))
	expectCompletion(t, d.take(1)[0], 1, sacc.StatusOK, 0)
	if got := d.raw("clock_step"); got != "FAIL no pending events" {
		t.Errorf("clock_step after the doorbell: %q, want nothing left to run", got)
	}
	if st, code, irq := d.reg(sacc.RegSTATUS), d.reg(sacc.RegErrCode), d.reg(sacc.RegIRQStatus); st != 0 || code != 0 || irq != 0 {
		t.Errorf("STATUS 0x%x, ERR_CODE %d, IRQ_STATUS 0x%x: want all 0 (nothing sets them upstream)", st, code, irq)
	}

	v1 := newDevice(t)
	v1.programRings(sqRing, 8, cqRing, 8)
	v1.submit(nop(1))
	v1.run()
	v1.expectHalted(sacc.StatusNotEnabled)
	v1.expectNoNewCompletion()
}

// TestUpstreamTakesSQTailModuloTheSize: a tail of SQ_SIZE + 1 means 1 (v1: device
// error 5), and SQ_SIZE need not be a power of two (v1 refuses 3 at ENABLE).
func TestUpstreamTakesSQTailModuloTheSize(t *testing.T) {
	d := newUpstreamRings(t, 3, 8)
	d.putDesc(0, nop(0x10))
	d.putDesc(1, nop(0x11))
	d.doorbell(3 + 1)
	expectCompletion(t, d.take(1)[0], 0x10, sacc.StatusOK, 0)
	d.expectNoNewCompletion()
}

// TestUpstreamRunsOnlyNOP: every other opcode completes with status 1 and moves
// nothing; ERR_CODE stays 0 and the ring goes on.
func TestUpstreamRunsOnlyNOP(t *testing.T) {
	d := newUpstreamRings(t, 8, 8)
	src, dst := uint64(bufBase), uint64(bufBase+0x1000)
	d.write(src, pattern(64, 3))
	d.memset(dst, 64, 0xEE)
	d.submit(memcpyDesc(src, dst, 64, 1), xformDesc(src, dst, 64, 2), sacc.Descriptor{Opcode: 0x0100, ReqID: 3}, nop(4))
	cpls := d.take(4)
	for i, want := range []sacc.Status{sacc.StatusBadOpcode, sacc.StatusBadOpcode, sacc.StatusBadOpcode, sacc.StatusOK} {
		expectCompletion(t, cpls[i], uint32(i+1), want, 0)
	}
	if diff := firstDiff(d.read(dst, 64), bytes.Repeat([]byte{0xEE}, 64)); diff != "" {
		t.Errorf("the destination changed: %s", diff)
	}
	if code := d.reg(sacc.RegErrCode); code != 0 {
		t.Errorf("ERR_CODE %d after bad opcodes, want 0 (v1: 1)", code)
	}
}

// fillUpstreamCQ submits five NOPs to a 4-entry CQ: three are posted (one slot
// always stays empty) and the fourth finds the CQ full.
func fillUpstreamCQ(t *testing.T) *device {
	t.Helper()
	d := newUpstreamRings(t, 8, 4)
	d.submit(nop(1), nop(2), nop(3), nop(4), nop(5))
	for i, cpl := range d.take(3) {
		expectCompletion(t, cpl, uint32(i+1), sacc.StatusOK, 0)
	}
	d.expectNoNewCompletion()
	return d
}

// TestUpstreamCQFullWaitsForTheNextDoorbell: a CQ_HEAD write makes room but the
// device does not resume by itself (v1 does); the next doorbell, the same tail
// again, fetches the stalled descriptor again and carries on.
func TestUpstreamCQFullWaitsForTheNextDoorbell(t *testing.T) {
	d := fillUpstreamCQ(t)
	d.returnSlots() // CQ_HEAD = 3
	d.step(runNS)
	d.expectNoNewCompletion()
	d.doorbell(d.sqTail)
	for i, cpl := range d.take(2) {
		expectCompletion(t, cpl, uint32(i+4), sacc.StatusOK, 0)
	}
}

// TestUpstreamIgnoresCQHeadDB: CQ_HEAD_DB at 0x1004 does nothing, so a process
// that returns slots only there never unblocks a full CQ; CQ_HEAD at 0x30 does.
func TestUpstreamIgnoresCQHeadDB(t *testing.T) {
	fresh := newUpstreamRings(t, 8, 8)
	fresh.queue(nop(1))
	fresh.setReg(sacc.RegCQHeadDB, 1) // not a doorbell either
	fresh.expectNoNewCompletion()

	d := fillUpstreamCQ(t)
	d.setReg(sacc.RegCQHeadDB, d.cqHead)
	d.doorbell(d.sqTail)
	d.expectNoNewCompletion()
	if got := d.reg(sacc.RegCQHeadDB); got != 0 {
		t.Errorf("CQ_HEAD_DB reads 0x%x, want 0", got)
	}
	d.returnSlots()
	d.doorbell(d.sqTail)
	if n := len(d.take(2)); n != 2 {
		t.Fatalf("%d completions after CQ_HEAD, want 2", n)
	}

	// v1: the same CQ_HEAD_DB write gives the slots back and the device resumes.
	v1 := newRunningDevice(t, 8, 4)
	v1.submit(nop(1), nop(2), nop(3), nop(4))
	v1.run()
	v1.take(3)
	v1.setReg(sacc.RegCQHeadDB, v1.cqHead)
	v1.run()
	expectCompletion(t, v1.take(1)[0], 4, sacc.StatusOK, 0)
}

// TestUpstreamWritesTheBodyThenThePhase: with the CQ's first entry ending two
// bytes short of the end of RAM, the first write (bytes 0–13) lands and the
// second (the phase) fails: the entry's fields are there, its phase is not, and
// the loop stops with the descriptor still the device's.
func TestUpstreamWritesTheBodyThenThePhase(t *testing.T) {
	d := newUpstreamDevice(t)
	cqBase := uint64(unmappedPA - sacc.CplBodySize) // upstream checks no alignment
	d.programRings(sqRing, 8, cqBase, 8)
	d.submit(nop(0x77))
	body := sacc.DecodeCompletion(append(d.read(cqBase, sacc.CplBodySize), 0, 0))
	if body.ReqID != 0x77 || body.Status != sacc.StatusOK {
		t.Fatalf("bytes 0-13 = %+v, want req_id 0x77 written before the phase", body)
	}
	d.doorbell(d.sqTail) // the same descriptor again: the same two writes
	if got := sacc.DecodeCompletion(append(d.read(cqBase, sacc.CplBodySize), 0, 0)); got != body {
		t.Errorf("after a second doorbell: %+v, want %+v", got, body)
	}
}

// TestUpstreamPhaseStartsAtOneAndInvertsOnWrap: the first lap of a 4-entry CQ
// carries phase 1, the second phase 0, with CQ_HEAD stored in between.
func TestUpstreamPhaseStartsAtOneAndInvertsOnWrap(t *testing.T) {
	d := newUpstreamRings(t, 8, 4)
	d.submit(nop(1), nop(2), nop(3))
	for _, cpl := range d.take(3) {
		if cpl.Phase != 1 {
			t.Fatalf("first lap: phase %d, want 1", cpl.Phase)
		}
	}
	d.returnSlots()
	d.submit(nop(4), nop(5))
	if got := d.completionAt(0); got.ReqID != 5 || got.Phase != 0 {
		t.Fatalf("slot 0 on the second lap: %+v, want req_id 5 with phase 0", got)
	}
	d.take(2)
}

// TestUpstreamStoresRegistersAsWritten: CTRL keeps what was written (RESET does
// not clear itself, ENABLE brings no READY), ring registers stay writable with
// ENABLE set, RESET clears nothing, and SCRATCH does not exist.
func TestUpstreamStoresRegistersAsWritten(t *testing.T) {
	d := newUpstreamDevice(t)
	d.setReg(sacc.RegCTRL, sacc.CtrlEnable)
	d.step(10 * enableLatencyNS)
	if ctrl, st := d.reg(sacc.RegCTRL), d.reg(sacc.RegSTATUS); ctrl != sacc.CtrlEnable || st != 0 {
		t.Errorf("after ENABLE: CTRL 0x%x, STATUS 0x%x; want 0x1 and 0 (no READY upstream)", ctrl, st)
	}
	d.setReg(sacc.RegSQSize, 16)
	if got := d.reg(sacc.RegSQSize); got != 16 {
		t.Errorf("SQ_SIZE written with ENABLE set reads %d, want 16 (v1 refuses it)", got)
	}
	d.setReg(sacc.RegCTRL, sacc.CtrlReset|sacc.CtrlEnable)
	if ctrl, size := d.reg(sacc.RegCTRL), d.reg(sacc.RegSQSize); ctrl != sacc.CtrlReset|sacc.CtrlEnable || size != 16 {
		t.Errorf("after RESET: CTRL 0x%x, SQ_SIZE %d; want 0x3 kept and SQ_SIZE untouched", ctrl, size)
	}
	d.setReg(sacc.RegSCRATCH, 0x1234)
	if got := d.reg(sacc.RegSCRATCH); got != 0 {
		t.Errorf("SCRATCH reads 0x%x, want 0: upstream has no SCRATCH", got)
	}
	d.setReg(sacc.RegCQHead, 5)
	if got := d.reg(sacc.RegCQHead); got != 0 {
		t.Errorf("CQ_HEAD reads 0x%x, want 0 (write-only)", got)
	}
}

// TestUpstreamAccessWidths: the register page takes 4 and 8 bytes at any aligned
// offset (8 as two 4-byte halves); the doorbell page 4 only; anything else reads
// 0 (v1: all ones) and writes nothing.
func TestUpstreamAccessWidths(t *testing.T) {
	d := newUpstreamDevice(t)
	if got, want := d.readq(bar0Base+sacc.RegMAGIC), uint64(sacc.VersionValue)<<32|sacc.MagicValue; got != want {
		t.Errorf("readq MAGIC = 0x%x, want 0x%x (MAGIC and VERSION; v1 refuses a 64-bit read there)", got, want)
	}
	d.writeq(bar0Base+sacc.RegCTRL, 0x3_0000_0001)
	if got := d.reg(sacc.RegCTRL); got != 1 {
		t.Errorf("writeq at CTRL: CTRL reads 0x%x, want 0x1 (the high half hit read-only STATUS)", got)
	}
	for _, c := range []struct {
		req  string
		want string
	}{
		{"readw 0xc0000000", "OK 0x0000000000000000"},
		{"readb 0xc0000003", "OK 0x0000000000000000"},
		{"readl 0xc0000002", "OK 0x0000000000000000"},
		{"readq 0xc0000004", "OK 0x0000000000000000"},
		{"readq 0xc0001000", "OK 0x0000000000000000"},
	} {
		if got := d.raw(c.req); got != c.want {
			t.Errorf("%s = %q, want %q", c.req, got, c.want)
		}
	}
	d.programRings(sqRing, 8, cqRing, 8)
	d.queue(nop(1))
	d.writeq(bar0Base+sacc.RegSQTail, 1) // refused: the doorbell page takes 4 bytes only
	d.expectNoNewCompletion()
	d.writew(bar0Base+sacc.RegSQSize, 2) // refused
	if got := d.reg(sacc.RegSQSize); got != 8 {
		t.Errorf("a 16-bit write changed SQ_SIZE to %d", got)
	}
}

// TestUpstreamFetchFailureRunsAZeroDescriptor: a descriptor that cannot be read
// becomes zeros, a NOP with req_id 0, and completes.
func TestUpstreamFetchFailureRunsAZeroDescriptor(t *testing.T) {
	d := newUpstreamDevice(t)
	d.programRings(unmappedPA, 8, cqRing, 8)
	d.doorbell(1)
	d.sqBase = sqRing // the driver's view of the ring does not matter here
	expectCompletion(t, d.take(1)[0], 0, sacc.StatusOK, 0)
}

// TestUpstreamWithoutBusMasteringPostsNothing: with bus mastering off no DMA
// reaches memory; the descriptor stays the device's, and once bus mastering is on
// the next doorbell runs it.
func TestUpstreamWithoutBusMasteringPostsNothing(t *testing.T) {
	d := newUpstreamRings(t, 8, 8)
	d.setCommand(sacc.CmdMemorySpace)
	d.submit(nop(9))
	d.expectNoNewCompletion()
	d.setCommand(sacc.CmdMemorySpace | sacc.CmdBusMaster)
	d.doorbell(d.sqTail)
	expectCompletion(t, d.take(1)[0], 9, sacc.StatusOK, 0)
}

// TestUpstreamCQSizeZeroStopsTheLoop: upstream divides by CQ_SIZE when it checks
// for room; with CQ_SIZE 0 QEMU itself would die. The profile posts nothing and
// goes on answering.
func TestUpstreamCQSizeZeroStopsTheLoop(t *testing.T) {
	d := newUpstreamDevice(t)
	d.programRings(sqRing, 8, cqRing, 0)
	d.cqSize = 8
	d.submit(nop(1))
	d.expectNoNewCompletion()
	if got := d.reg(sacc.RegMAGIC); got != sacc.MagicValue {
		t.Fatalf("MAGIC reads 0x%x after the doorbell", got)
	}
}

// TestUpstreamTraceSpeaksUpstreamsTracePoints: qtest's trace on prints the
// profile's events with upstream's names and formats (qemu/trace-events).
func TestUpstreamTraceSpeaksUpstreamsTracePoints(t *testing.T) {
	m, err := machine.New(machine.Config{Profile: profile.UpstreamV01()})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	s := qtest.NewSession(m, &log)
	defer s.Close()
	var desc [sacc.DescriptorSize]byte
	sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: 0x2000, Dst: 0x3000, Length: 8, ReqID: 2}.Encode(desc[:])
	for _, line := range []string{
		"writel 0xb0018010 0xc0000000", "writew 0xb0018004 0x6",
		"writel 0xc0000010 0x100000", "writel 0xc0000018 0x8",
		"writel 0xc0000020 0x110000", "writel 0xc0000028 0x8",
		"write 0x100000 32 0x" + hexOf(desc[:]),
		"trace on",
		"readl 0xc0000000", "writel 0xc0001004 0x1", "writel 0xc0001000 0x1",
	} {
		if r := s.Exec(line); !strings.HasPrefix(r, "OK") {
			t.Fatalf("%s: %s", line, r)
		}
	}
	want := []string{
		"sacc_mmio_reg_read addr=0x0 val=0x4a4e524f size=4",
		"sacc_doorbell sq_tail=1",
		"sacc_sq_fetch idx=0 src=0x2000 dst=0x3000 len=8 op=0x1 flags=0x0 req_id=0x2",
		"sacc_exec req_id=0x2 op 0x1 len 8",
		"sacc_exec_err req_id=0x2 status 0x1",
		"sacc_cq_post cq_tail=0 req_id=0x2 status 0x1 result_len 0 phase 0x1",
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(f[1], "sacc_") {
			got = append(got, strings.Join(f[1:], " "))
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("device trace:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(out)
}
