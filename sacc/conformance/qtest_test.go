package conformance

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
)

// expectReply sends a request and checks the exact reply line.
func (c *client) expectReply(line, want string) {
	c.t.Helper()
	if got := c.raw(line); got != want {
		c.t.Errorf("%q: reply %q, want %q", clip(line), clip(got), want)
	}
}

// QTEST.md: in* replies "OK 0x%04x (value, at least 4 hex digits)".
func TestQtestInReplyFormat(t *testing.T) {
	c := newClient(t)
	c.outl(sacc.PortConfigAddress, 0) // bit 31 clear: the data window reads all ones
	c.expectReply("inb 0xcfc", "OK 0x00ff")
	c.expectReply("inw 0xcfc", "OK 0xffff")
	c.expectReply("inl 0xcfc", "OK 0xffffffff")
	c.outl(sacc.PortConfigAddress, sacc.ConfigAddress(0, 3, 0, sacc.CfgRevision))
	c.expectReply("inb 0xcfc", "OK 0x0001") // revision 0x01
	c.expectReply("inb 0xcfd", "OK 0x0000") // prog-if 0x00
	c.expectReply("inw 0xcfe", "OK 0x1200") // class 0x12, subclass 0x00
	c.expectReply("inl 0xcfc", "OK 0x12000001")
}

// QTEST.md: out* and write* reply "OK".
func TestQtestOutAndWriteReplyOK(t *testing.T) {
	c := newClient(t)
	for _, line := range []string{
		"outb 0xcf8 0x0", "outw 0xcf8 0x0", "outl 0xcf8 0x80001800",
		"writeb 0x1000 0x1", "writew 0x1000 0x1", "writel 0x1000 0x1", "writeq 0x1000 0x1",
		"write 0x1000 2 0xabcd", "b64write 0x1000 3 AQID", "memset 0x1000 16 0x5a",
	} {
		c.expectReply(line, "OK")
	}
}

// QTEST.md: read* replies "OK 0x%016x (always 16 hex digits)".
func TestQtestReadReplyHas16HexDigits(t *testing.T) {
	c := newClient(t)
	c.writeq(0x1000, 0x0123_4567_89AB_CDEF)
	c.expectReply("readb 0x1000", "OK 0x00000000000000ef")
	c.expectReply("readw 0x1000", "OK 0x000000000000cdef")
	c.expectReply("readl 0x1000", "OK 0x0000000089abcdef")
	c.expectReply("readq 0x1000", "OK 0x0123456789abcdef")
	c.expectReply("readq 0x2000", "OK 0x0000000000000000")
	c.expectReply(fmt.Sprintf("readl 0x%x", ecam(0)), "OK 0x0000000010921b36")
}

// QTEST.md: write* are "guest-physical write, little-endian".
func TestQtestAccessesAreLittleEndian(t *testing.T) {
	c := newClient(t)
	c.writeq(0x1000, 0x0102_0304_0506_0708)
	c.expectReply("read 0x1000 8", "OK 0x0807060504030201")
	c.expectReply("readb 0x1007", "OK 0x0000000000000001")
	c.expectReply("readw 0x1002", "OK 0x0000000000000506")
	c.expectReply("readl 0x1004", "OK 0x0000000001020304")
	c.writew(0x1001, 0xAABB)
	c.expectReply("read 0x1000 4", "OK 0x08bbaa05")
}

// QTEST.md: "read ADDR SIZE → OK 0x<2·SIZE hex digits>: bytes in address order";
// "write ADDR SIZE 0xDATA".
func TestQtestReadWriteRoundTrip(t *testing.T) {
	c := newClient(t)
	data := pattern(1000, 0x3C)
	c.write(0x10_0FF0, data) // across a page boundary
	if diff := firstDiff(c.read(0x10_0FF0, len(data)), data); diff != "" {
		t.Fatalf("read back after write: %s", diff)
	}
	reply := c.raw("read 0x100ff0 3")
	if !regexp.MustCompile(`^OK 0x[0-9a-fA-F]{6}$`).MatchString(reply) {
		t.Fatalf("read 3 bytes: reply %q, want OK 0x and 6 hex digits", reply)
	}
}

// QTEST.md: "DATA shorter than SIZE is zero-filled at the end".
func TestQtestWriteZeroFillsShortData(t *testing.T) {
	c := newClient(t)
	c.memset(0x2000, 8, 0xFF)
	c.expectReply("write 0x2000 6 0xaabb", "OK")
	c.expectReply("read 0x2000 8", "OK 0xaabb00000000ffff")
}

// QTEST.md: "b64read ADDR SIZE / b64write ADDR SIZE B64 → OK B64 / OK: the same in
// base64".
func TestQtestB64RoundTrip(t *testing.T) {
	c := newClient(t)
	data := pattern(777, 0x11)
	c.expectReply(fmt.Sprintf("b64write 0x3001 %d %s", len(data), base64.StdEncoding.EncodeToString(data)), "OK")
	if diff := firstDiff(c.read(0x3001, len(data)), data); diff != "" {
		t.Fatalf("read after b64write: %s", diff)
	}
	payload := c.ok("b64read 0x3001 %d", len(data))
	got, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		got, err = base64.RawStdEncoding.DecodeString(payload)
	}
	if err != nil {
		t.Fatalf("b64read payload %q is not base64: %v", clip(payload), err)
	}
	if diff := firstDiff(got, data); diff != "" {
		t.Fatalf("b64read: %s", diff)
	}
}

// QTEST.md: "memset ADDR SIZE VALUE → OK; SIZE 0 is allowed and does nothing".
func TestQtestMemset(t *testing.T) {
	c := newClient(t)
	c.expectReply("memset 0x4000 5 0x5a", "OK")
	c.expectReply("read 0x3fff 7", "OK 0x005a5a5a5a5a00")
	c.expectReply("memset 0x4000 0 0x77", "OK")
	c.expectReply("read 0x4000 1", "OK 0x5a")
}

// QTEST.md: numbers are "parsed like C strtoul(s, NULL, 0): decimal, 0x hex or
// leading-0 octal".
func TestQtestNumberParsing(t *testing.T) {
	c := newClient(t)
	c.expectReply("writel 4096 305419896", "OK") // 0x1000, 0x12345678
	c.expectReply("readl 0x1000", "OK 0x0000000012345678")
	c.expectReply("readl 010000", "OK 0x0000000012345678") // octal 010000 = 0x1000
	c.expectReply("writeb 0X1004 0Xab", "OK")
	c.expectReply("readb 4100", "OK 0x00000000000000ab")
	c.expectReply("writeb 0x1005 0377", "OK") // octal 0377 = 0xff
	c.expectReply("readb 0x1005", "OK 0x00000000000000ff")
	c.expectReply("readq 0", "OK 0x0000000000000000")
	c.expectReply("readb 0xffffffffffffffff", "OK 0x00000000000000ff") // the largest 64-bit number
}

// QTEST.md: "clock_step with nothing pending replies FAIL no pending events and
// does not advance."
func TestQtestClockStepNoPendingFails(t *testing.T) {
	c := newClient(t)
	t0 := c.step(1)
	c.expectReply("clock_step", "FAIL no pending events")
	if t1 := c.step(1); t1 != t0+1 {
		t.Fatalf("time after a failed clock_step and clock_step 1 = %d, want %d", t1, t0+1)
	}
}

// QTEST.md: "clock_step NS → OK NS: advance by NS nanoseconds"; time is decimal.
func TestQtestClockStepAdvancesByNS(t *testing.T) {
	c := newClient(t)
	t0 := c.step(0)
	for _, ns := range []uint64{1, 10, 999, 100_000, 0x10} {
		before := c.now
		if got := c.step(ns); got != before+ns {
			t.Fatalf("clock_step %d from %d replied %d, want %d", ns, before, got, before+ns)
		}
	}
	c.expectReply("clock_step 0x10", fmt.Sprintf("OK %d", t0+1+10+999+100_000+16+16))
}

// QTEST.md: bare "clock_step → OK NS: advance virtual time to the next pending
// event". The enable latency is such an event: stepping through the pending events
// reaches READY without passing the 2 µs mark.
func TestQtestClockStepToNextEvent(t *testing.T) {
	d := newDevice(t)
	d.programRings(sqRing, 8, cqRing, 8)
	t0 := d.step(0)
	d.setReg(sacc.RegCTRL, sacc.CtrlEnable)
	last := t0
	for steps := 0; d.reg(sacc.RegSTATUS)&sacc.StatusReady == 0; steps++ {
		if steps == 100 {
			t.Fatalf("READY not set after 100 steps to the next event (time %d)", d.now)
		}
		now := d.okTime("clock_step")
		if now < last || now > t0+enableLatencyNS {
			t.Fatalf("clock_step went from %d to %d; the READY event is due at %d", last, now, t0+enableLatencyNS)
		}
		last = now
	}
	if last <= t0 {
		t.Fatalf("READY set without time passing")
	}
}

// QTEST.md: "clock_set NS → OK NS: advance to NS (no-op if already past)".
func TestQtestClockSet(t *testing.T) {
	c := newClient(t)
	t0 := c.step(0)
	c.expectReply(fmt.Sprintf("clock_set %d", t0+5000), fmt.Sprintf("OK %d", t0+5000))
	c.expectReply(fmt.Sprintf("clock_set %d", t0+10), fmt.Sprintf("OK %d", t0+5000)) // already past
	if now := c.step(1); now != t0+5001 {
		t.Fatalf("time after clock_set into the past = %d, want %d", now-1, t0+5000)
	}
}

// Project decision (QTEST.md: "An access through qtest is a CPU access"): accesses
// through qtest do not advance virtual time; only clock_* do.
func TestQtestAccessesDoNotAdvanceVirtualTime(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	t0 := d.step(0)
	for i := range 20 {
		d.reg(sacc.RegSTATUS)
		d.setReg(sacc.RegSCRATCH, uint32(i))
		d.cfgRead32(0)
		d.inl(sacc.PortConfigData)
		d.readq(0x1000)
		d.iommuRead32(sacc.IOMMURegCAP)
	}
	if now := d.step(0); now != t0 {
		t.Fatalf("virtual time moved from %d to %d through accesses alone", t0, now)
	}
	// The same holds during the enable latency: READY needs the clock.
	d.setReg(sacc.RegCTRL, 0)
	d.setReg(sacc.RegCTRL, sacc.CtrlEnable)
	for range 50 {
		if d.reg(sacc.RegSTATUS)&sacc.StatusReady != 0 {
			t.Fatalf("READY set by register reads alone")
		}
	}
}

// QTEST.md: "Where QEMU would abort on a malformed request (missing or unparsable
// argument, read of size 0, port above 0xFFFF, unknown command), saccbook replies
// FAIL <reason> on one line and keeps serving"; "a sign, a value that does not fit
// in 64 bits, or trailing junk makes the request malformed".
func TestQtestMalformedRequestsFail(t *testing.T) {
	c := newClient(t)
	c.writel(0x0, 0x0BAD_F00D)
	malformed := []string{
		"nonsense",
		"readl",
		"readl zz",
		"readl 0x",
		"readl 0x10zz",
		"readl 12abc",
		"readl 09",
		"readl -1",
		"readl +1",
		"readl -0x10",
		"readl 0x10000000000000000",
		"readl 18446744073709551616",
		"readb", "readw", "readq",
		"writel 0x1000",
		"writel 0x1000 zz",
		"writel 0x1000 -5",
		"writel 0x1000 5x",
		"writeq 0x1000 0x1ffffffffffffffff",
		"writeb", "writew", "writeq",
		"read 0x1000",
		"read 0x1000 0",
		"read 0x1000 -1",
		"read 0x1000 zz",
		"write 0x1000 4",
		"write 0x1000 2 zz",
		"write 0x1000 2 0xzzzz",
		"write 0x1000 zz 0x00",
		"b64read 0x1000",
		"b64write 0x1000 4",
		"memset 0x1000 4",
		"memset 0x1000 zz 0",
		"memset 0x1000 4 -1",
		"outb 0x10000 0",
		"outw 0x10000 0",
		"outl 0x10000 0",
		"outl 0x1ffff 0",
		"inb 0x10000",
		"inw 0x10000",
		"inl 0xffffffffffffffff",
		"outb 0xcf8",
		"outb",
		"inb",
		"inl zz",
		"clock_step abc",
		"clock_step -5",
		"clock_step 5ns",
		"clock_set",
		"clock_set abc",
		"clock_set -1",
		"\x00\x01\x02\xff",
		"readl\t0x0zz",
		strings.Repeat("x", 100_000),
		"readl " + strings.Repeat("9", 5000),
	}
	for _, line := range malformed {
		reply := c.raw(line)
		if !strings.HasPrefix(reply, "FAIL") {
			t.Errorf("%q: reply %q, want FAIL <reason>", clip(line), clip(reply))
		}
		if strings.ContainsAny(reply, "\n\r") {
			t.Errorf("%q: reply %q spans more than one line", clip(line), clip(reply))
		}
		// The session keeps serving, and the malformed request changed nothing.
		if got := c.raw("readl 0x0"); got != "OK 0x000000000badf00d" {
			t.Fatalf("after %q, readl 0x0 replied %q, want OK 0x000000000badf00d", clip(line), clip(got))
		}
	}
}

// QTEST.md: "No input may crash the server or leave it unable to answer the next
// line" — requests too large to serve are answered (read of 2^64 − 1 bytes cannot be
// served, so FAIL), and so are accesses at the very top of the address space.
func TestQtestHugeRequestsDoNotKillServer(t *testing.T) {
	c := newClient(t)
	mustFail := []string{
		"read 0x0 0xffffffffffffffff",
		"b64read 0x0 0xffffffffffffffff",
	}
	anyReply := []string{
		"write 0x0 0xffffffffffffffff 0x00",
		"b64write 0x0 0xffffffffffffffff AAAA",
		"memset 0x100000000 0x1000000000000 0",
		"readq 0xfffffffffffffffc",
		"writeq 0xfffffffffffffffc 0x1",
		"read 0xfffffffffffffff0 0x20",
	}
	for _, line := range mustFail {
		if reply := c.raw(line); !strings.HasPrefix(reply, "FAIL") {
			t.Errorf("%q: reply %q, want FAIL", line, clip(reply))
		}
		c.expectReply("readb 0x7", "OK 0x0000000000000000")
	}
	for _, line := range anyReply {
		c.raw(line)
		c.expectReply("readb 0x7", "OK 0x0000000000000000")
	}
}

// §11: "Runs are deterministic: the same scenario, configuration and seed give the
// same trace, byte for byte." The same qtest script gives the same replies.
func TestDeterministicReplies(t *testing.T) {
	scenario := func(t *testing.T) []string {
		d := newDevice(t)
		d.routeVectorsToRAM()
		pt := newIOPageTables(d.client)
		pt.identity(sqRing, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
		pt.identity(cqRing, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
		pt.identity(mailbox, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
		pt.identity(bufBase, 0x10000, sacc.PTERead|sacc.PTEWrite)
		pt.enableIOMMU(8)
		d.programRings(sqRing, 8, cqRing, 4)
		d.setReg(sacc.RegCTRL, sacc.CtrlEnable)
		d.write(bufBase, pattern(0x8000, 0x7E))
		stepAll := func() {
			for range 200 {
				if reply := d.raw("clock_step"); strings.HasPrefix(reply, "FAIL") {
					return
				}
			}
		}
		stepAll()
		d.submit(
			withIRQ(memcpyDesc(bufBase, bufBase+0x8000, 0x4000, 1)),
			xformDesc(bufBase+0x100, bufBase+0xC000, 0x2345, 2),
			withIRQ(memcpyDesc(0x0000_4000_0000_0000, bufBase, 64, 3)),
			sacc.Descriptor{Opcode: 0x0100, ReqID: 4},
			nop(5),
		)
		stepAll()
		d.raw(fmt.Sprintf("read 0x%x %d", cqRing, 4*sacc.CompletionSize))
		d.raw(fmt.Sprintf("b64read 0x%x 256", bufBase+0xC000))
		d.setReg(sacc.RegCQHead, 3)
		stepAll()
		d.raw(fmt.Sprintf("read 0x%x %d", cqRing, 4*sacc.CompletionSize))
		d.raw(fmt.Sprintf("read 0x%x %d", faultLog, 2*sacc.FaultRecordSize))
		d.raw(fmt.Sprintf("readl 0x%x", mailboxAddr(0)))
		d.setReg(sacc.RegSQTail, 99)
		stepAll()
		for off := uint32(0); off < sacc.RegFileEnd; off += 4 {
			d.reg(off)
		}
		d.raw("clock_step 12345")
		return d.transcript
	}
	var runs [2][]string
	for i := range runs {
		t.Run(fmt.Sprint("run", i+1), func(t *testing.T) { runs[i] = scenario(t) })
	}
	a, b := runs[0], runs[1]
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			t.Fatalf("transcripts differ at line %d:\n  run 1: %s\n  run 2: %s", i, clip(a[i]), clip(b[i]))
		}
	}
	if len(a) != len(b) {
		t.Fatalf("transcripts differ in length: %d and %d lines", len(a), len(b))
	}
}
