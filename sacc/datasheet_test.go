package sacc

import (
	"bytes"
	"testing"
)

func TestDescriptorRoundTrip(t *testing.T) {
	d := Descriptor{Src: 0x1122334455667788, Dst: 0x99AABBCCDDEEFF00, Length: 0x100000, Opcode: OpXFORM, Flags: FlagInterrupt, ReqID: 0xCAFEF00D}
	b := bytes.Repeat([]byte{0xEE}, DescriptorSize)
	d.Encode(b)
	if got := DecodeDescriptor(b); got != d {
		t.Fatalf("round trip: got %+v, want %+v", got, d)
	}
	// §6.1 byte layout, little-endian, reserved word written as 0.
	want := []byte{0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00, 0xFF, 0xEE, 0xDD, 0xCC, 0xBB, 0xAA, 0x99,
		0x00, 0x00, 0x10, 0x00, 0x02, 0x00, 0x01, 0x00, 0x0D, 0xF0, 0xFE, 0xCA, 0, 0, 0, 0}
	if !bytes.Equal(b, want) {
		t.Fatalf("layout:\n got % x\nwant % x", b, want)
	}
}

func TestCompletionLayoutPhaseLast(t *testing.T) {
	c := Completion{ReqID: 0x40, ResultLen: 0x1000, Status: StatusBadAddress, Phase: 1}
	b := bytes.Repeat([]byte{0xEE}, CompletionSize)
	c.Encode(b)
	want := []byte{0x40, 0, 0, 0, 0x00, 0x10, 0, 0, 0, 0, 0, 0, 0x02, 0x00, 0x01, 0x00}
	if !bytes.Equal(b, want) {
		t.Fatalf("layout:\n got % x\nwant % x", b, want)
	}
	if got := DecodeCompletion(b); got != c {
		t.Fatalf("round trip: %+v", got)
	}
	if CplBodySize+CplPhaseFieldSize != CompletionSize || CplPhaseOff != 14 {
		t.Fatal("the phase field must be the last two bytes (§6.2)")
	}
	b[CplPhaseOff] = 0xFE // other phase-field bits are not the phase
	if DecodeCompletion(b).Phase != 0 {
		t.Fatal("phase must be bit 0 only")
	}
}

func TestMSIXEntryRoundTrip(t *testing.T) {
	e := MSIXEntry{Addr: 0x1_FEE0_0000, Data: 0x41, Control: MSIXEntryMasked}
	var b [MSIXEntrySize]byte
	e.Encode(b[:])
	if got := DecodeMSIXEntry(b[:]); got != e || !got.Masked() {
		t.Fatalf("round trip: %+v", got)
	}
	if b[4] != 1 || b[8] != 0x41 || b[12] != 1 {
		t.Fatalf("layout: % x", b)
	}
}

func TestFaultRecordRoundTrip(t *testing.T) {
	r := FaultRecord{IOVA: 0xDEAD_B000, SourceID: SourceID(0, 3, 0), Reason: FaultWriteDenied, Access: AccessWrite}
	var b [FaultRecordSize]byte
	r.Encode(b[:])
	if got := DecodeFaultRecord(b[:]); got != r {
		t.Fatalf("round trip: %+v", got)
	}
	if r.SourceID != 0x18 || b[8] != 0x18 || b[10] != 2 || b[11] != 1 {
		t.Fatalf("layout (§10): % x", b)
	}
}

func TestPTEAndIOVAIndex(t *testing.T) {
	e := MakePTE(0x000F_1234_5678_9ABC, PTERead|PTEWrite|0x100)
	if e.Addr() != 0x000F_1234_5678_9000 || e.Perm() != 3 || !e.Present() {
		t.Fatalf("PTE %#x: addr %#x perm %d", uint64(e), e.Addr(), e.Perm())
	}
	if MakePTE(0x1000, 0).Present() {
		t.Fatal("an entry with neither bit is not present")
	}
	iova := uint64(0x1FF)<<39 | 0x0AB<<30 | 0x123<<21 | 0x045<<12 | 0xFFF
	for level, want := range []uint64{0x1FF, 0x0AB, 0x123, 0x045} {
		if got := IOVAIndex(iova, level); got != want {
			t.Errorf("level %d index %#x, want %#x", level, got, want)
		}
	}
	if IOMMUCapValue != 0x30420 {
		t.Errorf("CAP %#x", IOMMUCapValue)
	}
}

func TestConfigAddressing(t *testing.T) {
	if got := ECAMAddress(0, 3, 0, 0x10); got != 0xB001_8010 {
		t.Errorf("ECAM 00:03.0 BAR0 at %#x", got)
	}
	if got := ECAMAddress(255, 31, 7, 0xFFF); got != 0xBFFF_FFFF {
		t.Errorf("last ECAM byte at %#x", got)
	}
	if got := ConfigAddress(0, 3, 0, 0x12); got != 0x8000_1810 {
		t.Errorf("CONFIG_ADDRESS %#x", got)
	}
}

func TestBARSizeFromMask(t *testing.T) {
	for mask, want := range map[uint32]uint64{BAR0Mask: BAR0Size, BAR1Mask: BAR1Size, 0xFFFFE008: 8192, 0: 0} {
		if got := BARSizeFromMask(mask); got != want {
			t.Errorf("BARSizeFromMask(%#x) = %#x, want %#x", mask, got, want)
		}
	}
	if BAR0Mask != 0xFFFFE000 || BAR1Mask != 0xFFFFF000 {
		t.Error("BAR masks disagree with §3")
	}
}

func TestValidRingConfig(t *testing.T) {
	for _, tc := range []struct {
		sq, cq         uint32
		sqBase, cqBase uint64
		ok             bool
	}{
		{2, 2, 0x1000, 0x2000, true},
		{4096, 4096, 0, 0x100000, true},
		{1, 4, 0x1000, 0x2000, false},
		{0, 4, 0x1000, 0x2000, false},
		{3, 4, 0x1000, 0x2000, false},
		{8192, 4, 0x1000, 0x2000, false},
		{4, 4, 0x1800, 0x2000, false},
		{4, 4, 0x1000, 0x2010, false},
	} {
		if got := ValidRingConfig(tc.sqBase, tc.sq, tc.cqBase, tc.cq); got != tc.ok {
			t.Errorf("%+v: got %v", tc, got)
		}
	}
}

func TestNames(t *testing.T) {
	for off, want := range map[uint32]string{RegCTRL: "CTRL", RegSQTail: "SQ_TAIL", RegCQHeadDB: "CQ_HEAD_DB", RegSQBaseHi: "SQ_BASE_HI", 0x44: "reserved"} {
		if got := RegName(off); got != want {
			t.Errorf("RegName(%#x) = %q", off, got)
		}
	}
	for op, want := range map[uint16]string{OpNOP: "NOP", OpMEMCPY: "MEMCPY", OpXFORM: "XFORM", 0x0150: "reserved-inference", 0x0250: "reserved-kv", 0x0003: "invalid"} {
		if got := OpName(op); got != want {
			t.Errorf("OpName(%#x) = %q", op, got)
		}
	}
	if StatusRingConfig.String() != "invalid ring configuration" || Status(99).String() != "unknown" {
		t.Error("status names")
	}
	for off := uint32(0); off < 0x48; off += 4 {
		if IOMMURegName(off) == "" {
			t.Errorf("IOMMURegName(%#x) empty", off)
		}
	}
}

func TestRingArithmetic(t *testing.T) {
	// §7.3: one slot stays empty.
	if !RingFull(3, 0, 4) || RingFull(2, 0, 4) || !RingFull(0, 1, 4) {
		t.Error("RingFull")
	}
	if !RingEmpty(2, 2) || RingEmpty(2, 3) {
		t.Error("RingEmpty")
	}
}
