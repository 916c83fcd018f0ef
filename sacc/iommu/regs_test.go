package iommu

import (
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/trace"
)

func TestRegisterDefaultsAndCAP(t *testing.T) {
	check := func(t *testing.T, f *fixture) {
		t.Helper()
		for off := uint64(0); off < sacc.IOMMUSize; off += 4 {
			want := uint64(0)
			if off == sacc.IOMMURegCAP {
				want = sacc.IOMMUCapValue
			}
			if got := f.read(off, 4); got != want {
				t.Errorf("reg %#x (%s) = %#x, want %#x", off, sacc.IOMMURegName(uint32(off)), got, want)
			}
		}
		for _, off := range []uint64{sacc.IOMMURegPTRoot, sacc.IOMMURegInvalidate, sacc.IOMMURegFaultBase, sacc.IOMMURegFaultMSIAddr} {
			if got := f.read(off, 8); got != 0 {
				t.Errorf("64-bit reg %#x = %#x, want 0", off, got)
			}
		}
		if f.u.Enabled() || len(f.u.IOTLB()) != 0 {
			t.Errorf("Enabled %v, IOTLB %v: want off and empty", f.u.Enabled(), f.u.IOTLB())
		}
	}

	t.Run("power-on", func(t *testing.T) {
		f := newFixture(t, 0)
		capv := f.read(sacc.IOMMURegCAP, 4)
		// §10: bits 7:0 IOTLB entries, 11:8 levels, 19:12 input address width.
		if capv&0xFF != 32 || capv>>8&0xF != 4 || capv>>12&0xFF != 48 {
			t.Errorf("CAP = %#x: want 32 entries, 4 levels, 48 bits", capv)
		}
		check(t, f)
	})
	t.Run("after-reset", func(t *testing.T) {
		f := enabled(t, 0)
		f.mapPage(0x5000, dataPages, rw)
		f.translate(0x5000, sacc.AccessRead, dataPages, true, 0)
		f.write(sacc.IOMMURegFaultBase, 8, faultLog)
		f.write(sacc.IOMMURegFaultSize, 4, 1) // always full: the next fault overflows
		f.write(sacc.IOMMURegFaultHead, 4, 7)
		f.write(sacc.IOMMURegFaultMSIAddr, 8, sacc.IntWindowBase)
		f.write(sacc.IOMMURegFaultMSIData, 4, 0x40)
		f.translate(0x9000, sacc.AccessRead, 0, true, sacc.FaultNotPresent)
		if f.read(sacc.IOMMURegSTATUS, 4)&sacc.IOMMUStatusOverflowed == 0 {
			t.Fatal("setup: overflow not set")
		}
		f.u.Reset()
		check(t, f)
	})
}

func TestRegisterAccessWidths(t *testing.T) {
	cases := []struct {
		off  uint64
		size int
		ok   bool
	}{
		{sacc.IOMMURegCAP, 4, true},
		{sacc.IOMMURegCAP, 8, false}, // CAP is a 32-bit register
		{sacc.IOMMURegCTRL, 8, false},
		{sacc.IOMMURegSTATUS, 4, true},
		{sacc.IOMMURegPTRoot, 8, true},
		{sacc.IOMMURegPTRoot, 4, true},
		{sacc.IOMMURegPTRoot + 4, 4, true},
		{sacc.IOMMURegPTRoot + 4, 8, false}, // 64-bit only at a register's base
		{sacc.IOMMURegInvalidate, 8, true},
		{sacc.IOMMURegFaultBase, 8, true},
		{sacc.IOMMURegFaultSize, 8, false},
		{sacc.IOMMURegFaultMSIAddr, 8, true},
		{sacc.IOMMURegFaultMSIData, 8, false},
		{0x48, 8, false}, // reserved: 32-bit only
		{0x04, 4, true},  // reserved but aligned
		{0xFFC, 4, true},
		{0x02, 4, false}, // misaligned
		{0x12, 4, false},
		{sacc.IOMMURegPTRoot, 2, false}, // 8- and 16-bit accesses are not decoded
		{sacc.IOMMURegCTRL, 1, false},
		{sacc.IOMMURegCTRL, 16, false},
		{sacc.IOMMUSize, 4, false}, // outside the block
	}
	for _, c := range cases {
		f := newFixture(t, 0)
		_, rok := f.u.ReadReg(c.off, c.size)
		wok := f.u.WriteReg(c.off, c.size, 0)
		if rok != c.ok || wok != c.ok {
			t.Errorf("off %#x size %d: read ok %v, write ok %v, want %v", c.off, c.size, rok, wok, c.ok)
		}
		want := []trace.Kind{trace.IOMMURegRead, trace.IOMMURegWrite}
		if c.off == sacc.IOMMURegInvalidate && c.ok {
			want = append(want, trace.IOMMUInvalidate)
		}
		if !c.ok {
			want = nil // the caller traces the guest error, not the IOMMU
		}
		if got := f.kinds(); !sameKinds(got, want) {
			t.Errorf("off %#x size %d: events %v, want %v", c.off, c.size, got, want)
		}
	}
}

func TestRegister64BitHalves(t *testing.T) {
	for _, off := range []uint64{sacc.IOMMURegPTRoot, sacc.IOMMURegFaultBase, sacc.IOMMURegFaultMSIAddr} {
		f := newFixture(t, 0)
		f.write(off, 8, 0x1122_3344_5566_7000)
		if lo, hi := f.read(off, 4), f.read(off+4, 4); lo != 0x5566_7000 || hi != 0x1122_3344 {
			t.Errorf("%s: halves %#x %#x", sacc.IOMMURegName(uint32(off)), lo, hi)
		}
		f.write(off, 4, 0xAAAA_B000)
		if got := f.read(off, 8); got != 0x1122_3344_AAAA_B000 {
			t.Errorf("%s after low-half write = %#x", sacc.IOMMURegName(uint32(off)), got)
		}
		f.write(off+4, 4, 0xCC)
		if got := f.read(off, 8); got != 0xCC_AAAA_B000 {
			t.Errorf("%s after high-half write = %#x", sacc.IOMMURegName(uint32(off)), got)
		}
	}
}

func TestRegisterReadOnlyReservedAndWriteOnly(t *testing.T) {
	f := newFixture(t, 0)
	// Read-only and reserved writes are accepted and ignored.
	for _, off := range []uint64{sacc.IOMMURegCAP, sacc.IOMMURegSTATUS, sacc.IOMMURegFaultTail, 0x04, 0x44, 0xFFC} {
		before := f.read(off, 4)
		f.write(off, 4, 0xFFFF_FFFF)
		if got := f.read(off, 4); got != before {
			t.Errorf("write to %#x changed it: %#x -> %#x", off, before, got)
		}
	}
	// CTRL keeps only TRANSLATE_ENABLE.
	f.write(sacc.IOMMURegCTRL, 4, 0xFFFF_FFFF)
	if got := f.read(sacc.IOMMURegCTRL, 4); got != sacc.IOMMUCtrlTranslate {
		t.Errorf("CTRL = %#x, want only TRANSLATE_ENABLE", got)
	}
	if got := f.read(sacc.IOMMURegSTATUS, 4); got != sacc.IOMMUStatusActive {
		t.Errorf("STATUS = %#x, want translation active", got)
	}
	// INVALIDATE is write-only: it reads 0 at any width.
	f.write(sacc.IOMMURegInvalidate, 8, 0x1234_5000)
	for _, a := range []struct {
		off  uint64
		size int
	}{{sacc.IOMMURegInvalidate, 8}, {sacc.IOMMURegInvalidate, 4}, {sacc.IOMMURegInvalidate + 4, 4}} {
		if got := f.read(a.off, a.size); got != 0 {
			t.Errorf("INVALIDATE read at %#x/%d = %#x", a.off, a.size, got)
		}
	}
}

func TestRegisterAccessesAreTraced(t *testing.T) {
	f := newFixture(t, 0)
	f.write(sacc.IOMMURegPTRoot+4, 4, 0x1_0000_0002) // a 32-bit write keeps 32 bits
	f.read(sacc.IOMMURegCAP, 4)
	f.read(sacc.IOMMURegPTRoot, 8)
	want := []trace.Event{
		{Kind: trace.IOMMURegWrite, Args: [trace.MaxArgs]uint64{sacc.IOMMURegPTRoot + 4, 4, 2}},
		{Kind: trace.IOMMURegRead, Args: [trace.MaxArgs]uint64{sacc.IOMMURegCAP, 4, sacc.IOMMUCapValue}},
		{Kind: trace.IOMMURegRead, Args: [trace.MaxArgs]uint64{sacc.IOMMURegPTRoot, 8, 2 << 32}},
	}
	if len(f.buf.Events) != len(want) {
		t.Fatalf("events %v", f.buf.Events)
	}
	for i, w := range want {
		if g := f.buf.Events[i]; g.Kind != w.Kind || g.Args != w.Args {
			t.Errorf("event %d = %v %v, want %v %v", i, g.Kind, g.Args, w.Kind, w.Args)
		}
	}
}

func TestStateSnapshotIsNotTraced(t *testing.T) {
	f := enabled(t, 0)
	f.write(sacc.IOMMURegFaultSize, 4, 8)
	f.buf.Reset()
	s := f.u.State()
	if s.CTRL != 1 || s.STATUS != sacc.IOMMUStatusActive || s.PTRoot != rootTable || s.FaultSize != 8 {
		t.Errorf("State = %+v", s)
	}
	if len(f.buf.Events) != 0 {
		t.Errorf("State traced %v", f.kinds())
	}
}
