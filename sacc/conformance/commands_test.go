package conformance

import (
	"bytes"
	"testing"

	"github.com/saccbook/saccbook/sacc"
)

// guard is the byte tests fill destination areas with, to see what a command wrote.
const guard = 0xEE

// expectBytes checks guest memory against want.
func (c *client) expectBytes(what string, addr uint64, want []byte) {
	c.t.Helper()
	if diff := firstDiff(c.read(addr, len(want)), want); diff != "" {
		c.t.Fatalf("%s (0x%x, %d bytes): %s", what, addr, len(want), diff)
	}
}

// expectUntouched checks that n bytes at addr still hold the guard byte.
func (c *client) expectUntouched(what string, addr uint64, n int) {
	c.t.Helper()
	c.expectBytes(what+" must be untouched", addr, bytes.Repeat([]byte{guard}, n))
}

// §6.3: "NOP: nothing moves; status OK, result_len 0"; §6.1/§6.2: req_id is echoed.
func TestNOPCompletion(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	cpl := d.submitAndRun(nop(0xCAFE_0001), nop(0xFFFF_FFFF), nop(0))
	expectCompletion(t, cpl[0], 0xCAFE_0001, sacc.StatusOK, 0)
	expectCompletion(t, cpl[1], 0xFFFF_FFFF, sacc.StatusOK, 0)
	expectCompletion(t, cpl[2], 0, sacc.StatusOK, 0)
	if ec := d.reg(sacc.RegErrCode); ec != 0 {
		t.Errorf("ERR_CODE = %d after NOPs, want 0", ec)
	}
	d.expectRunning()
}

// §6.3: for NOP "addresses and length ignored": any length, any addresses, nothing
// written, status OK.
func TestNOPIgnoresAddressesAndLength(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.memset(bufBase, 64, guard)
	descs := []sacc.Descriptor{
		{Src: unmappedPA, Dst: bufBase, Length: 64, Opcode: sacc.OpNOP, ReqID: 1},
		{Src: bufBase, Dst: bufBase, Length: 0xFFFF_FFFF, Opcode: sacc.OpNOP, ReqID: 2},
		{Src: ^uint64(0), Dst: 1 << 60, Length: sacc.MaxLength + 1, Opcode: sacc.OpNOP, ReqID: 3},
	}
	for i, cpl := range d.submitAndRun(descs...) {
		expectCompletion(t, cpl, uint32(i+1), sacc.StatusOK, 0)
	}
	d.expectUntouched("NOP destination", bufBase, 64)
	d.expectRunning()
}

// §6.3: "MEMCPY: copy length bytes from src to dst"; §6.3 (v1): "result_len is
// length on success". Unaligned buffers crossing pages, no byte outside dst written.
func TestMEMCPYCopies(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	const n = 5000
	src, dst := uint64(bufBase+0x0FF3), uint64(bufBase+0x2_0777)
	data := pattern(n, 0x5C)
	d.write(src, data)
	d.memset(dst-16, n+32, guard)

	cpl := d.submitAndRun(memcpyDesc(src, dst, n, 0x1001))
	expectCompletion(t, cpl[0], 0x1001, sacc.StatusOK, n)
	d.expectBytes("MEMCPY destination", dst, data)
	d.expectBytes("MEMCPY source", src, data)
	d.expectUntouched("the 16 bytes before the destination", dst-16, 16)
	d.expectUntouched("the 16 bytes after the destination", dst+n, 16)
}

// §6.3: "XFORM: copy, XOR-ing every byte with 0x17".
func TestXFORMXorsWith0x17(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	const n = 4099
	src, dst := uint64(bufBase+0x10), uint64(bufBase+0x3_0001)
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i) // every byte value, several times
	}
	d.write(src, data)
	d.memset(dst-8, n+16, guard)

	cpl := d.submitAndRun(xformDesc(src, dst, n, 0x2002))
	expectCompletion(t, cpl[0], 0x2002, sacc.StatusOK, n)
	d.expectBytes("XFORM destination", dst, xorBytes(data, sacc.XFORMKey))
	d.expectBytes("XFORM source", src, data)
	d.expectUntouched("the bytes before the destination", dst-8, 8)
	d.expectUntouched("the bytes after the destination", dst+n, 8)
}

// §6.3 (v1): "Copy semantics are memmove: the device reads the source into its own
// buffer, then writes" — overlapping ranges copy as if through a buffer.
func TestMemmoveOverlap(t *testing.T) {
	const n = 300
	data := pattern(n, 0x33)
	cases := []struct {
		name     string
		src, dst uint64
		op       uint16
		want     []byte
	}{
		{"destination above source", bufBase, bufBase + 100, sacc.OpMEMCPY, data},
		{"destination below source", bufBase + 100, bufBase, sacc.OpMEMCPY, data},
		{"destination one byte above, across a page", bufBase + 0xFFF - 150, bufBase + 0xFFF - 149, sacc.OpMEMCPY, data},
		{"XFORM in place", bufBase, bufBase, sacc.OpXFORM, xorBytes(data, sacc.XFORMKey)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newRunningDevice(t, 8, 8)
			d.write(tc.src, data)
			desc := sacc.Descriptor{Src: tc.src, Dst: tc.dst, Length: n, Opcode: tc.op, ReqID: 7}
			expectCompletion(t, d.submitAndRun(desc)[0], 7, sacc.StatusOK, n)
			d.expectBytes("destination", tc.dst, tc.want)
		})
	}
}

// §6.3 (v1): "length must be 1 … 1 MiB (0x100000)": the largest copy is allowed.
func TestMEMCPYOneMiBIsAllowed(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	src, dst := uint64(bufBase), uint64(bufBase+0x20_0000)
	data := pattern(sacc.MaxLength, 0x9D)
	d.write(src, data)
	d.submit(memcpyDesc(src, dst, sacc.MaxLength, 0x100000))
	// §11 bounds only descriptors up to 64 KiB; give this one time to finish.
	for range 50 {
		d.run()
		if d.completionAt(0).Phase == 1 {
			break
		}
	}
	expectCompletion(t, d.take(1)[0], 0x100000, sacc.StatusOK, sacc.MaxLength)
	d.expectBytes("1 MiB MEMCPY destination", dst, data)
}

// §6.3 (v1): "MEMCPY and XFORM: length must be 1 … 1 MiB (0x100000); otherwise
// status 3 and nothing is written"; result_len is 0 on any error.
func TestLengthZeroAndOverOneMiBIsStatus3(t *testing.T) {
	d := newRunningDevice(t, 16, 16)
	src, dst := uint64(bufBase), uint64(bufBase+0x1000)
	d.write(src, pattern(64, 1))
	d.memset(dst, 64, guard)
	var descs []sacc.Descriptor
	for _, op := range []uint16{sacc.OpMEMCPY, sacc.OpXFORM} {
		for _, n := range []uint32{0, sacc.MaxLength + 1, 0x8000_0000, 0xFFFF_FFFF} {
			descs = append(descs, sacc.Descriptor{Src: src, Dst: dst, Length: n, Opcode: op, ReqID: uint32(len(descs))})
		}
	}
	for i, cpl := range d.submitAndRun(descs...) {
		if cpl.ReqID != uint32(i) || cpl.Status != sacc.StatusBadLength || cpl.ResultLen != 0 {
			t.Errorf("opcode %d length 0x%x: completion %+v, want status 3 and result_len 0",
				descs[i].Opcode, descs[i].Length, cpl)
		}
	}
	d.expectUntouched("destination of bad-length commands", dst, 64)
	if ec := d.reg(sacc.RegErrCode); ec != uint32(sacc.StatusBadLength) {
		t.Errorf("ERR_CODE = %d, want 3", ec)
	}
	d.expectRunning()
}

// §6.3 and §8: an opcode other than NOP, MEMCPY or XFORM (the reserved ranges
// included) completes with status 1 and writes nothing.
func TestBadOpcodeIsStatus1(t *testing.T) {
	d := newRunningDevice(t, 16, 16)
	src, dst := uint64(bufBase), uint64(bufBase+0x1000)
	d.write(src, pattern(64, 2))
	d.memset(dst, 64, guard)
	opcodes := []uint16{0x0003, 0x00FF, 0x0100, 0x01FF, 0x0200, 0x02FF, 0x0300, 0x8000, 0xFFFF}
	var descs []sacc.Descriptor
	for i, op := range opcodes {
		descs = append(descs, sacc.Descriptor{Src: src, Dst: dst, Length: 64, Opcode: op, ReqID: uint32(0x100 + i)})
	}
	for i, cpl := range d.submitAndRun(descs...) {
		if cpl.ReqID != uint32(0x100+i) || cpl.Status != sacc.StatusBadOpcode || cpl.ResultLen != 0 {
			t.Errorf("opcode 0x%04x: completion %+v, want status 1 and result_len 0", opcodes[i], cpl)
		}
	}
	d.expectUntouched("destination of bad-opcode commands", dst, 64)
	if ec := d.reg(sacc.RegErrCode); ec != uint32(sacc.StatusBadOpcode) {
		t.Errorf("ERR_CODE = %d, want 1", ec)
	}
	d.expectRunning()
}

// §6.3 (v1): "Checks run in this order, and the first that fails decides the
// status: opcode (status 1), then length (status 3), then the source range, then the
// destination range (status 2)." The IOMMU's fault record shows which range failed.
func TestCheckOrderOpcodeThenLengthThenSrcThenDst(t *testing.T) {
	const badSrc, badDst = 0x0000_5000_0000_0000, 0x0000_6000_0000_0000
	cases := []struct {
		name   string
		desc   sacc.Descriptor
		status sacc.Status
		faults []sacc.FaultRecord // nil: not checked
	}{
		{"bad opcode, length, source and destination", sacc.Descriptor{Src: badSrc, Dst: badDst, Length: 0, Opcode: 0x0003}, sacc.StatusBadOpcode, nil},
		{"length 0, bad source and destination", memcpyDesc(badSrc, badDst, 0, 0), sacc.StatusBadLength, nil},
		{"length over 1 MiB, bad source and destination", xformDesc(badSrc, badDst, sacc.MaxLength+1, 0), sacc.StatusBadLength, nil},
		{"bad source and destination", memcpyDesc(badSrc, badDst, 64, 0), sacc.StatusBadAddress,
			[]sacc.FaultRecord{fault(badSrc, sacc.FaultNotPresent, sacc.AccessRead)}},
		{"bad destination", memcpyDesc(bufBase, badDst, 64, 0), sacc.StatusBadAddress,
			[]sacc.FaultRecord{fault(badDst, sacc.FaultNotPresent, sacc.AccessWrite)}},
		{"all good", xformDesc(bufBase, bufBase+0x1000, 64, 0), sacc.StatusOK, []sacc.FaultRecord{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, pt := newTranslatedDevice(t, 8, 8)
			pt.identity(bufBase, 2*sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
			desc := tc.desc
			desc.ReqID = 0x0DE5
			resultLen := uint32(0)
			if tc.status == sacc.StatusOK {
				resultLen = desc.Length
			}
			expectCompletion(t, d.submitAndRun(desc)[0], 0x0DE5, tc.status, resultLen)
			if tc.faults != nil {
				d.expectFaults(tc.faults...)
			}
		})
	}
}

// §6.3 (v1): the device checks "the whole source range and then the whole
// destination range, page by page in address order, before it moves a byte; it
// stops at the first page that fails ... and writes nothing".
func TestBadAddressWritesNothing(t *testing.T) {
	const srcIOVA, dstIOVA = 0x0000_0011_0000_0000, 0x0000_0022_0000_0000
	srcPhys, dstPhys := uint64(bufBase), uint64(bufBase+0x10000)
	cases := []struct {
		name  string
		setup func(pt *ioPageTables)
		want  sacc.FaultRecord
	}{
		{"destination's second page not present", func(pt *ioPageTables) {
			pt.mapRange(srcIOVA, srcPhys, 2*sacc.PageSize, sacc.PTERead)
			pt.mapRange(dstIOVA, dstPhys, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
		}, fault(dstIOVA+sacc.PageSize, sacc.FaultNotPresent, sacc.AccessWrite)},
		{"destination's second page read-only", func(pt *ioPageTables) {
			pt.mapRange(srcIOVA, srcPhys, 2*sacc.PageSize, sacc.PTERead)
			pt.mapRange(dstIOVA, dstPhys, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
			pt.mapRange(dstIOVA+sacc.PageSize, dstPhys+sacc.PageSize, sacc.PageSize, sacc.PTERead)
		}, fault(dstIOVA+sacc.PageSize, sacc.FaultWriteDenied, sacc.AccessWrite)},
		{"source's second page not present", func(pt *ioPageTables) {
			pt.mapRange(srcIOVA, srcPhys, sacc.PageSize, sacc.PTERead)
			pt.mapRange(dstIOVA, dstPhys, 2*sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
		}, fault(srcIOVA+sacc.PageSize, sacc.FaultNotPresent, sacc.AccessRead)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, pt := newTranslatedDevice(t, 8, 8)
			tc.setup(pt)
			d.write(srcPhys, pattern(2*sacc.PageSize, 4))
			d.memset(dstPhys, 2*sacc.PageSize, guard)
			for _, op := range []uint16{sacc.OpMEMCPY, sacc.OpXFORM} {
				desc := sacc.Descriptor{Src: srcIOVA + 0x800, Dst: dstIOVA + 0x800, Length: sacc.PageSize, Opcode: op, ReqID: uint32(op)}
				expectCompletion(t, d.submitAndRun(desc)[0], uint32(op), sacc.StatusBadAddress, 0)
				d.expectUntouched("destination pages", dstPhys, 2*sacc.PageSize)
			}
			d.expectFaults(tc.want, tc.want)
			if ec := d.reg(sacc.RegErrCode); ec != uint32(sacc.StatusBadAddress) {
				t.Errorf("ERR_CODE = %d, want 2", ec)
			}
			d.expectRunning()
		})
	}
}

// §6.3 (v1): "A zeroed descriptor is therefore a NOP with req_id 0: the classic
// symptom of a doorbell rung before the descriptor reached memory."
func TestZeroedDescriptorIsNOPWithReqID0(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.doorbell(1) // SQ slot 0 was never written: the SQ memory is zero
	d.run()
	cpl := d.take(1)[0]
	expectCompletion(t, cpl, 0, sacc.StatusOK, 0)
	if cpl.Phase != 1 {
		t.Errorf("phase = %d, want 1", cpl.Phase)
	}
	d.expectRunning()
}

// §6.1: flags "bit 0: interrupt on completion; other bits reserved (ignored)".
func TestDescriptorReservedFlagsIgnored(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.routeVectorsToRAM()
	src, dst := uint64(bufBase), uint64(bufBase+0x1000)
	data := pattern(128, 9)
	d.write(src, data)
	desc := memcpyDesc(src, dst, 128, 0xF1A6)
	desc.Flags = ^uint16(sacc.FlagInterrupt)
	expectCompletion(t, d.submitAndRun(desc)[0], 0xF1A6, sacc.StatusOK, 128)
	d.expectBytes("destination", dst, data)
	if v := d.mailboxValue(0, false); v != 0 {
		t.Errorf("vector 0 message 0x%x sent for a descriptor with flag bit 0 clear", v)
	}
	if v := d.reg(sacc.RegIRQStatus); v != 0 {
		t.Errorf("IRQ_STATUS = 0x%x for a descriptor with flag bit 0 clear", v)
	}
}

// §6.2: completion bytes 8–11 are "reserved: written as 0"; the phase field has "bit
// 0: phase flag; other bits 0". The device writes them even over non-zero memory.
func TestCompletionReservedFieldsZero(t *testing.T) {
	d := newRunningDevice(t, 8, 8)
	d.memset(cqRing, 8*sacc.CompletionSize, 0xFF)
	d.write(bufBase, pattern(16, 3))
	d.submit(nop(0x11), memcpyDesc(bufBase, bufBase+0x100, 16, 0x22), sacc.Descriptor{Opcode: 0x0009, ReqID: 0x33})
	d.run()
	want := []sacc.Completion{
		{ReqID: 0x11, Status: sacc.StatusOK, Phase: 1},
		{ReqID: 0x22, ResultLen: 16, Status: sacc.StatusOK, Phase: 1},
		{ReqID: 0x33, Status: sacc.StatusBadOpcode, Phase: 1},
	}
	for i, w := range want {
		var b [sacc.CompletionSize]byte
		w.Encode(b[:])
		if raw := d.rawCompletion(uint32(i)); !bytes.Equal(raw, b[:]) {
			t.Errorf("CQ slot %d = % x, want % x", i, raw, b)
		}
	}
}

// §11 (relied on by every test here): "All work triggered by one doorbell for
// descriptors of up to 64 KiB completes within 100 µs of virtual time under the
// default model" — checked at the limit: 64 KiB, every page translated by the
// IOMMU for the first time, and an interrupt.
func TestWorkOfOneDoorbellCompletesWithin100us(t *testing.T) {
	const src, dst, n = 0x0000_0010_0000_0000, 0x0000_0020_0000_0000, 64 << 10
	d, pt := newTranslatedDevice(t, 8, 8)
	pt.mapRange(src, bufBase, n, sacc.PTERead)
	pt.mapRange(dst, bufBase+0x10_0000, n, sacc.PTERead|sacc.PTEWrite)
	d.routeVectorsToRAM()
	data := pattern(n, 0xA5)
	d.write(bufBase, data)
	expectCompletion(t, d.submitAndRun(withIRQ(xformDesc(src, dst, n, 64)))[0], 64, sacc.StatusOK, n)
	d.expectBytes("destination", bufBase+0x10_0000, xorBytes(data, sacc.XFORMKey))
	if v := d.mailboxValue(0, false); v != msiData0 {
		t.Errorf("vector 0 not delivered within 100 µs (mailbox 0x%x)", v)
	}
}
