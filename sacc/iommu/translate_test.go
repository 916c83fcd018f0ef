package iommu

import (
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/trace"
)

func TestWalkFourLevels(t *testing.T) {
	cases := []struct {
		name string
		iova uint64 // page
		phys uint64 // page
	}{
		{"low page", 0x0000_0000_0000_5000, dataPages + 0x5000},
		{"every index non-zero", 0x0000_7ABC_DE12_3000, dataPages + 0x3000},
		{"top of 48 bits", sacc.IOVALimit - sacc.PageSize, dataPages},
		{"phys above 4 GiB", 0x0000_0001_0000_0000, 0x0000_0123_4567_8000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := enabled(t, 0)
			f.mapPage(c.iova, c.phys, rw)
			f.translate(c.iova+0x345, sacc.AccessRead, c.phys+0x345, true, 0)
			if got, want := f.kinds(), []trace.Kind{trace.IOTLBMiss, trace.IOMMUTranslate}; !sameKinds(got, want) {
				t.Errorf("events %v, want %v", got, want)
			}
			f.walkEvents(c.iova + 0x345)
			if ev := f.events(trace.IOMMUTranslate); ev[0].Args != [trace.MaxArgs]uint64{c.iova, c.phys, rw} {
				t.Errorf("iommu_translate args %#x", ev[0].Args)
			}
			// The second access to the page hits.
			f.buf.Reset()
			f.translate(c.iova+0xFFF, sacc.AccessWrite, c.phys+0xFFF, false, 0)
			if got, want := f.kinds(), []trace.Kind{trace.IOTLBHit, trace.IOMMUTranslate}; !sameKinds(got, want) {
				t.Errorf("events %v, want %v", got, want)
			}
			// Walk reports each level: table, index, entry.
			steps := f.u.Walk(c.iova + 0x345)
			if len(steps) != sacc.IOPTLevels {
				t.Fatalf("Walk: %d steps", len(steps))
			}
			table := uint64(rootTable)
			for l, s := range steps {
				idx := sacc.IOVAIndex(c.iova, l)
				if s.Level != l || s.Table != table || s.Index != idx || s.NotRAM ||
					uint64(s.Entry) != f.rd64(table+idx*sacc.IOPTEntrySize) {
					t.Errorf("step %d = %+v", l, s)
				}
				table = s.Entry.Addr()
			}
			if table != c.phys {
				t.Errorf("Walk leaf %#x, want %#x", table, c.phys)
			}
		})
	}
}

func TestFaultReasons(t *testing.T) {
	const iova = 0x0000_0040_8020_1000
	cases := []struct {
		name   string
		setup  func(f *fixture)
		iova   uint64
		access uint8
		reason sacc.FaultReason
		missed bool
	}{
		{"not present: nothing mapped", func(f *fixture) {}, 0x7FFF_0000_0000, sacc.AccessRead, sacc.FaultNotPresent, true},
		{"not present: level 0 entry clear", func(f *fixture) { f.wr64(f.entryAddr(iova, 0), 0) }, iova, sacc.AccessRead, sacc.FaultNotPresent, true},
		{"not present: level 1 entry clear", func(f *fixture) { f.wr64(f.entryAddr(iova, 1), 0) }, iova, sacc.AccessWrite, sacc.FaultNotPresent, true},
		{"not present: level 2 entry clear", func(f *fixture) { f.wr64(f.entryAddr(iova, 2), 0) }, iova, sacc.AccessRead, sacc.FaultNotPresent, true},
		{"not present: leaf clear", func(f *fixture) { f.wr64(f.entryAddr(iova, 3), 0) }, iova, sacc.AccessRead, sacc.FaultNotPresent, true},
		{"not present: address but no permission bits", func(f *fixture) {
			f.wr64(f.entryAddr(iova, 3), uint64(sacc.MakePTE(dataPages, 0)))
		}, iova, sacc.AccessRead, sacc.FaultNotPresent, true},
		{"not present: table not RAM", func(f *fixture) {
			f.wr64(f.entryAddr(iova, 1), uint64(sacc.MakePTE(beyondRAM, rw)))
		}, iova, sacc.AccessRead, sacc.FaultNotPresent, true},
		{"not present: PT_ROOT not RAM", func(f *fixture) {
			f.write(sacc.IOMMURegPTRoot, 8, beyondRAM)
		}, iova, sacc.AccessRead, sacc.FaultNotPresent, true},
		{"write denied: read-only leaf", func(f *fixture) { f.mapPage(iova, dataPages, sacc.PTERead) }, iova, sacc.AccessWrite, sacc.FaultWriteDenied, true},
		{"read denied: write-only leaf", func(f *fixture) { f.mapPage(iova, dataPages, sacc.PTEWrite) }, iova, sacc.AccessRead, sacc.FaultReadDenied, true},
		{"address width: 2^48", func(f *fixture) {}, sacc.IOVALimit, sacc.AccessRead, sacc.FaultAddressWidth, false},
		{"address width: checked before the walk", func(f *fixture) { f.mapPage(iova, dataPages, rw) }, sacc.IOVALimit | iova, sacc.AccessWrite, sacc.FaultAddressWidth, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := enabled(t, 0)
			f.mapPage(iova, dataPages, rw)
			c.setup(f)
			f.write(sacc.IOMMURegFaultBase, 8, faultLog)
			f.write(sacc.IOMMURegFaultSize, 4, 16)
			f.buf.Reset()
			f.translate(c.iova+0x10, c.access, 0, c.missed, c.reason)

			want := []trace.Kind{trace.IOTLBMiss, trace.IOMMUFault}
			if c.reason == sacc.FaultAddressWidth {
				want = want[1:] // no IOTLB lookup at all
			}
			if got := f.kinds(); !sameKinds(got, want) {
				t.Errorf("events %v, want %v", got, want)
			}
			if c.reason != sacc.FaultAddressWidth {
				f.walkEvents(c.iova + 0x10) // the walk stops at the level that faults
			} else if n := len(f.events(trace.IOMMUWalk)); n != 0 {
				t.Errorf("%d iommu_walk events beyond 48 bits: there is no walk", n)
			}
			if ev := f.events(trace.IOMMUFault); len(ev) == 1 &&
				ev[0].Args != [trace.MaxArgs]uint64{c.iova + 0x10, uint64(c.reason), uint64(c.access), srcID} {
				t.Errorf("iommu_fault args %#x", ev[0].Args)
			}
			rec := sacc.DecodeFaultRecord(f.mem.b[faultLog:])
			if want := (sacc.FaultRecord{IOVA: c.iova + 0x10, SourceID: srcID, Reason: c.reason, Access: c.access}); rec != want {
				t.Errorf("record %+v, want %+v", rec, want)
			}
			if n := len(f.u.IOTLB()); n != 0 {
				t.Errorf("a fault filled the IOTLB (%d entries)", n)
			}
		})
	}
}

func TestEffectivePermissionIsANDOfLevels(t *testing.T) {
	const R, W = sacc.PTERead, sacc.PTEWrite
	cases := []struct {
		perms [sacc.IOPTLevels]uint64
		eff   uint64
	}{
		{[4]uint64{rw, rw, rw, rw}, rw},
		{[4]uint64{R, rw, rw, rw}, R},
		{[4]uint64{rw, W, rw, rw}, W},
		{[4]uint64{rw, rw, R, rw}, R},
		{[4]uint64{rw, rw, rw, W}, W},
		{[4]uint64{R, W, rw, rw}, 0}, // each level present, nothing allowed
		{[4]uint64{R, R, R, R}, R},
	}
	for _, c := range cases {
		for _, access := range []uint8{sacc.AccessRead, sacc.AccessWrite} {
			f := enabled(t, 0)
			f.mapPage(0x7000, dataPages, rw)
			f.setPerms(0x7000, c.perms)
			need, reason := uint64(R), sacc.FaultReadDenied
			if access == sacc.AccessWrite {
				need, reason = W, sacc.FaultWriteDenied
			}
			phys, _, fault := f.u.Translate(0x7008, access, srcID)
			if c.eff&need != 0 {
				if fault != 0 || phys != dataPages+8 {
					t.Errorf("perms %v access %d: (%#x, %v), want allowed", c.perms, access, phys, fault)
				}
				if tlb := f.u.IOTLB(); len(tlb) != 1 || tlb[0].Perm != c.eff {
					t.Errorf("perms %v: IOTLB %+v, want perm %#x", c.perms, tlb, c.eff)
				}
			} else if fault != reason {
				t.Errorf("perms %v access %d: fault %v, want %v", c.perms, access, fault, reason)
			}
		}
	}
}

func TestIOTLBHitChecksCachedPermissionWithoutWalk(t *testing.T) {
	f := enabled(t, 0)
	f.write(sacc.IOMMURegFaultBase, 8, faultLog)
	f.write(sacc.IOMMURegFaultSize, 4, 4)
	f.mapPage(0x3000, dataPages, sacc.PTERead)
	f.translate(0x3000, sacc.AccessRead, dataPages, true, 0)
	// Granting W in the tables changes nothing: the IOTLB's cached perm decides.
	f.mapPage(0x3000, dataPages, rw)
	f.buf.Reset()
	f.translate(0x3004, sacc.AccessWrite, 0, false, sacc.FaultWriteDenied)
	if got, want := f.kinds(), []trace.Kind{trace.IOTLBHit, trace.IOMMUFault}; !sameKinds(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if tlb := f.u.IOTLB(); len(tlb) != 1 || tlb[0].Perm != sacc.PTERead {
		t.Errorf("IOTLB %+v: a denied hit must keep the entry", tlb)
	}
}

func TestIOTLBKeepsStaleTranslationUntilInvalidate(t *testing.T) {
	const iova = 0x12_3456_7000 // above 4 GiB, so the 32-bit halves matter
	const oldPhys, newPhys = dataPages, dataPages + 0x1000
	type inv struct {
		off  uint64
		size int
		val  uint64
	}
	cases := []struct {
		name    string
		writes  []inv
		events  [][2]uint64 // IOMMUInvalidate args: iova, dropped
		flushed bool
	}{
		{"other page: nothing dropped", []inv{{sacc.IOMMURegInvalidate, 8, iova + sacc.PageSize}},
			[][2]uint64{{iova + sacc.PageSize, 0}}, false},
		{"page, 64-bit", []inv{{sacc.IOMMURegInvalidate, 8, iova + 0x123}},
			[][2]uint64{{iova, 1}}, true},
		{"all, 64-bit", []inv{{sacc.IOMMURegInvalidate, 8, sacc.InvalidateAll}},
			[][2]uint64{{sacc.InvalidateAll, 2}}, true},
		{"page, 32-bit low then high", []inv{{sacc.IOMMURegInvalidate, 4, iova & 0xFFFF_FFFF}, {sacc.IOMMURegInvalidate + 4, 4, iova >> 32}},
			[][2]uint64{{iova & 0xFFFF_F000, 0}, {iova, 1}}, true},
		{"page, 32-bit low only", []inv{{sacc.IOMMURegInvalidate, 4, iova & 0xFFFF_FFFF}},
			[][2]uint64{{iova & 0xFFFF_F000, 0}}, false},
		{"all, 32-bit halves", []inv{{sacc.IOMMURegInvalidate, 4, 0xFFFF_FFFF}, {sacc.IOMMURegInvalidate + 4, 4, 0xFFFF_FFFF}},
			[][2]uint64{{0xFFFF_F000, 0}, {sacc.InvalidateAll, 2}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := enabled(t, 0)
			f.mapPage(iova, oldPhys, rw)
			f.mapPage(0x1000, dataPages+0x8000, rw) // a bystander entry
			f.translate(iova, sacc.AccessRead, oldPhys, true, 0)
			f.translate(0x1000, sacc.AccessRead, dataPages+0x8000, true, 0)

			// Remap, then unmap: the IOTLB does not watch the tables (§10).
			f.mapPage(iova, newPhys, rw)
			f.translate(iova+8, sacc.AccessWrite, oldPhys+8, false, 0)
			f.wr64(f.entryAddr(iova, 3), 0)
			f.translate(iova+8, sacc.AccessRead, oldPhys+8, false, 0)
			f.mapPage(iova, newPhys, rw)

			f.buf.Reset()
			for _, w := range c.writes {
				f.write(w.off, w.size, w.val)
			}
			ev := f.events(trace.IOMMUInvalidate)
			if len(ev) != len(c.events) {
				t.Fatalf("invalidate events %v, want %v", ev, c.events)
			}
			for i, e := range ev {
				if [2]uint64{e.Args[0], e.Args[1]} != c.events[i] {
					t.Errorf("invalidate %d: %#x, want %#x", i, e.Args[:2], c.events[i])
				}
			}
			if c.flushed {
				f.translate(iova+8, sacc.AccessRead, newPhys+8, true, 0)
			} else {
				f.translate(iova+8, sacc.AccessRead, oldPhys+8, false, 0)
			}
		})
	}
}

func TestIOTLBLeastRecentlyUsedEviction(t *testing.T) {
	f := enabled(t, 0)
	page := func(i int) uint64 { return uint64(i+1) * sacc.PageSize }
	phys := func(i int) uint64 { return dataPages + uint64(i)*sacc.PageSize }
	for i := 0; i <= sacc.IOTLBEntries; i++ {
		f.mapPage(page(i), phys(i), rw)
	}
	for i := 0; i < sacc.IOTLBEntries; i++ {
		f.translate(page(i), sacc.AccessRead, phys(i), true, 0)
	}
	if n := len(f.events(trace.IOTLBEvict)); n != 0 {
		t.Fatalf("%d evictions while filling 32 entries", n)
	}
	f.translate(page(0), sacc.AccessRead, phys(0), false, 0) // page 0 becomes most recent
	f.buf.Reset()
	f.translate(page(sacc.IOTLBEntries), sacc.AccessRead, phys(sacc.IOTLBEntries), true, 0) // the 33rd page
	if got, want := f.kinds(), []trace.Kind{trace.IOTLBMiss, trace.IOTLBEvict, trace.IOMMUTranslate}; !sameKinds(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if ev := f.events(trace.IOTLBEvict); ev[0].Args[0] != page(1) {
		t.Errorf("evicted %#x, want page 1 (%#x), the least recently used", ev[0].Args[0], page(1))
	}
	tlb := f.u.IOTLB()
	if len(tlb) != sacc.IOTLBEntries || tlb[0].IOVAPage != page(sacc.IOTLBEntries) || tlb[1].IOVAPage != page(0) ||
		tlb[len(tlb)-1].IOVAPage != page(2) {
		t.Errorf("IOTLB order (MRU first): %+v", tlb)
	}
	f.translate(page(0), sacc.AccessRead, phys(0), false, 0)
	f.translate(page(1), sacc.AccessRead, phys(1), true, 0)
}

func TestPassthroughWhenDisabled(t *testing.T) {
	f := newFixture(t, 0)
	f.write(sacc.IOMMURegPTRoot, 8, rootTable)
	f.mapPage(0x4000, dataPages, rw)
	f.buf.Reset()
	for _, iova := range []uint64{0, 0x4123, sacc.IntWindowBase, sacc.IOVALimit + 5, ^uint64(0)} {
		for _, a := range []uint8{sacc.AccessRead, sacc.AccessWrite} {
			f.translate(iova, a, iova, false, 0)
		}
	}
	if len(f.buf.Events) != 0 || len(f.u.IOTLB()) != 0 {
		t.Errorf("passthrough traced %v / filled IOTLB %v", f.kinds(), f.u.IOTLB())
	}
}

func TestTranslateToggleKeepsIOTLB(t *testing.T) {
	f := enabled(t, 0)
	f.mapPage(0x4000, dataPages, rw)
	f.translate(0x4000, sacc.AccessRead, dataPages, true, 0)
	f.mapPage(0x4000, dataPages+0x1000, rw)
	f.write(sacc.IOMMURegCTRL, 4, 0)
	f.translate(0x4000, sacc.AccessRead, 0x4000, false, 0)
	f.write(sacc.IOMMURegCTRL, 4, sacc.IOMMUCtrlTranslate)
	f.translate(0x4000, sacc.AccessRead, dataPages, false, 0) // still the stale entry
}

func TestInterruptWindowWritesBypassTranslation(t *testing.T) {
	f := enabled(t, 0)
	f.translate(sacc.IntWindowBase+0x10, sacc.AccessWrite, sacc.IntWindowBase+0x10, false, 0)
	f.translate(sacc.IntWindowBase+sacc.IntWindowSize-4, sacc.AccessWrite, sacc.IntWindowBase+sacc.IntWindowSize-4, false, 0)
	if len(f.buf.Events) != 0 {
		t.Errorf("bypass traced %v", f.kinds())
	}
	// Reads of the window, and writes just outside it, are translated like any DMA.
	f.translate(sacc.IntWindowBase, sacc.AccessRead, 0, true, sacc.FaultNotPresent)
	f.translate(sacc.IntWindowBase+sacc.IntWindowSize, sacc.AccessWrite, 0, true, sacc.FaultNotPresent)
}

func TestQuirkIOTLBIgnoresInvalidate(t *testing.T) {
	f := enabled(t, quirk.Set(0).With(quirk.IOTLBIgnoresInvalidate))
	f.mapPage(0x4000, dataPages, rw)
	f.translate(0x4000, sacc.AccessRead, dataPages, true, 0)
	f.mapPage(0x4000, dataPages+0x1000, rw)
	f.buf.Reset()
	f.write(sacc.IOMMURegInvalidate, 8, 0x4000)
	f.write(sacc.IOMMURegInvalidate, 8, sacc.InvalidateAll)
	ev := f.events(trace.IOMMUInvalidate)
	if len(ev) != 2 || [2]uint64(ev[0].Args[:2]) != [2]uint64{0x4000, 0} || [2]uint64(ev[1].Args[:2]) != [2]uint64{sacc.InvalidateAll, 0} {
		t.Errorf("invalidate events %v: want both acknowledged, nothing dropped", ev)
	}
	f.translate(0x4000, sacc.AccessRead, dataPages, false, 0)
}

func TestWalkStopsAtNotPresent(t *testing.T) {
	f := enabled(t, 0)
	f.mapPage(0x4000, dataPages, rw)
	f.wr64(f.entryAddr(0x4000, 2), 0)
	steps := f.u.Walk(0x4000)
	if len(steps) != 3 || steps[2].Entry != 0 || steps[2].NotRAM {
		t.Errorf("Walk = %+v, want 3 steps ending in the empty level-2 entry", steps)
	}
	f.wr64(f.entryAddr(0x4000, 1), uint64(sacc.MakePTE(beyondRAM, rw)))
	steps = f.u.Walk(0x4000)
	if len(steps) != 3 || !steps[2].NotRAM || steps[2].Table != beyondRAM {
		t.Errorf("Walk = %+v, want 3 steps ending in a table that is not RAM", steps)
	}
	if f.u.Walk(sacc.IOVALimit) != nil {
		t.Error("Walk beyond 48 bits returned steps")
	}
	if len(f.buf.Events) != 0 || len(f.u.IOTLB()) != 0 {
		t.Errorf("Walk traced %v / filled the IOTLB", f.kinds())
	}
}
