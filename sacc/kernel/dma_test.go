package kernel_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/host/hosttest"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
)

var (
	withIOMMU = host.Config{Kernel: kernel.Config{IOMMU: true}}
	withLazy  = host.Config{Kernel: kernel.Config{IOMMU: true, LazyUnmap: true}}
)

func iommuQuirk(q quirk.Quirk, lazy bool) host.Config {
	return host.Config{Kernel: kernel.Config{IOMMU: true, LazyUnmap: lazy, Quirks: quirk.Set(0).With(q)}}
}

// faults reads the IOMMU fault log the kernel set up.
func faults(h *host.Host) []sacc.FaultRecord {
	st := h.M.IOMMU().State()
	var out []sacc.FaultRecord
	for i := st.FaultHead; i != st.FaultTail; i = (i + 1) % st.FaultSize {
		out = append(out, sacc.DecodeFaultRecord(ramBytes(h, st.FaultBase+uint64(i)*sacc.FaultRecordSize, sacc.FaultRecordSize)))
	}
	return out
}

func mapSingle(t *testing.T, d *kernel.PCIDev, cpu, n uint64, dir kernel.Direction) uint64 {
	t.Helper()
	dma, err := d.DMAMapSingle(cpu, n, dir)
	if err != nil {
		t.Fatal(err)
	}
	return dma
}

func TestDirectionNames(t *testing.T) {
	for dir, want := range map[kernel.Direction]string{
		kernel.DMABidirectional: "DMA_BIDIRECTIONAL", kernel.DMAToDevice: "DMA_TO_DEVICE", kernel.DMAFromDevice: "DMA_FROM_DEVICE",
	} {
		if dir.String() != want {
			t.Errorf("%d prints %q, want %q", dir, dir.String(), want)
		}
	}
}

// ---------------------------------------------------------------------------
// Without an IOMMU

func TestDMAWithoutIOMMUIsPhysical(t *testing.T) {
	h, d := bare(t, host.Config{})
	if h.K.IOMMUOn() || h.M.IOMMU().Enabled() {
		t.Fatal("IOMMU on without Config.IOMMU")
	}
	for _, size := range []uint64{1, 100, pg, pg + 1, 5 * pg} {
		before := h.K.MemInUse()
		cpuAddr, dma, err := d.DMAAllocCoherent(size)
		if err != nil {
			t.Fatal(err)
		}
		if dma != cpuAddr || cpuAddr%pg != 0 {
			t.Errorf("coherent %#x bytes: cpu %#x dma %#x, want equal and page aligned", size, cpuAddr, dma)
		}
		if got := h.K.MemInUse() - before; got != (size+pg-1)&^(pg-1) {
			t.Errorf("coherent %#x bytes took %#x", size, got)
		}
		if b := ramBytes(h, cpuAddr, size); !bytes.Equal(b, make([]byte, size)) {
			t.Errorf("coherent memory is not zeroed")
		}
		d.DMAFreeCoherent(size, cpuAddr, dma)
		if h.K.MemInUse() != before {
			t.Errorf("DMAFreeCoherent left %#x in use", h.K.MemInUse()-before)
		}
	}
	buf, _ := h.K.AllocPages(3 * pg)
	for _, dir := range []kernel.Direction{kernel.DMABidirectional, kernel.DMAToDevice, kernel.DMAFromDevice} {
		for _, off := range []uint64{0, 0x10, pg + 0x7FF} {
			if dma := mapSingle(t, d, buf+off, pg, dir); dma != buf+off {
				t.Errorf("%v map of %#x = %#x, want the physical address", dir, buf+off, dma)
			}
			d.DMAUnmapSingle(buf+off, pg, dir)
		}
	}
}

func TestDeviceCopiesBetweenPhysicalAddressesWithoutIOMMU(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	pd := h.Dev.PCI()
	data := pattern(3*pg, 3)
	src := hosttest.KernelBuffer(t, h, data)
	dst := hosttest.KernelBuffer(t, h, make([]byte, 3*pg))
	s := mapSingle(t, pd, src, 3*pg, kernel.DMAToDevice)
	dd := mapSingle(t, pd, dst, 3*pg, kernel.DMAFromDevice)
	if _, err := doMemcpy(h, s, dd, 3*pg, false); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ramBytes(h, dst, 3*pg), data) {
		t.Fatal("copy did not arrive")
	}
}

// ---------------------------------------------------------------------------
// Behind the IOMMU

func TestBootProgramsTheIOMMU(t *testing.T) {
	h, _ := bare(t, withIOMMU)
	st := h.M.IOMMU().State()
	if !h.K.IOMMUOn() || !h.M.IOMMU().Enabled() || st.STATUS&1 == 0 {
		t.Fatalf("translation not on: %+v", st)
	}
	if st.PTRoot == 0 || st.PTRoot%pg != 0 || st.FaultBase == 0 || st.FaultBase%pg != 0 || !sacc.IsPowerOfTwo(uint64(st.FaultSize)) {
		t.Fatalf("IOMMU registers %+v", st)
	}
	if st.PTRoot == st.FaultBase {
		t.Fatal("page table root and fault log share a page")
	}
}

func TestDMAAllocCoherentBehindIOMMU(t *testing.T) {
	h, d := bare(t, withIOMMU)
	var ranges [][2]uint64
	for _, size := range []uint64{1, pg, pg + 1, 4 * pg} {
		cpuAddr, dma, err := d.DMAAllocCoherent(size)
		if err != nil {
			t.Fatal(err)
		}
		if dma < kernel.IOVABase || dma%pg != 0 || dma == cpuAddr {
			t.Errorf("coherent %#x bytes at dma %#x (cpu %#x): want a page-aligned IOVA ≥ %#x", size, dma, cpuAddr, kernel.IOVABase)
		}
		pages := (size + pg - 1) / pg
		for i := range pages {
			e := leaf(h, dma+i*pg)
			if e.Addr() != cpuAddr+i*pg || e.Perm() != sacc.PTERead|sacc.PTEWrite {
				t.Errorf("coherent page %d: PTE %#x, want %#x RW", i, uint64(e), cpuAddr+i*pg)
			}
		}
		if leaf(h, dma+pages*pg).Present() {
			t.Errorf("the page after a %#x-byte coherent buffer is mapped", size)
		}
		for _, r := range ranges {
			if dma < r[1] && r[0] < dma+pages*pg {
				t.Errorf("IOVA %#x overlaps [%#x, %#x)", dma, r[0], r[1])
			}
		}
		ranges = append(ranges, [2]uint64{dma, dma + pages*pg})
		defer func() {
			d.DMAFreeCoherent(size, cpuAddr, dma)
			for i := range pages {
				if leaf(h, dma+i*pg).Present() {
					t.Errorf("page %d of a freed coherent buffer is still mapped", i)
				}
			}
		}()
	}
}

func TestDMAMapSingleMapsByDirection(t *testing.T) {
	for _, tc := range []struct {
		dir  kernel.Direction
		perm uint64
	}{
		{kernel.DMAToDevice, sacc.PTERead},
		{kernel.DMAFromDevice, sacc.PTEWrite},
		{kernel.DMABidirectional, sacc.PTERead | sacc.PTEWrite},
	} {
		for _, off := range []uint64{0, 0x234, pg - 1} {
			t.Run(fmt.Sprintf("%v+%#x", tc.dir, off), func(t *testing.T) {
				h, d := bare(t, withIOMMU)
				buf, _ := h.K.AllocPages(4 * pg)
				const n = 2 * pg
				dma := mapSingle(t, d, buf+off, n, tc.dir)
				if dma < kernel.IOVABase {
					t.Fatalf("DMA address %#x below IOVABase", dma)
				}
				if dma&sacc.PageMask != off {
					t.Fatalf("DMA address %#x does not keep the page offset %#x", dma, off)
				}
				pages := (off + n + pg - 1) / pg
				for i := range pages {
					e := leaf(h, dma-off+i*pg)
					if e.Addr() != buf+i*pg || e.Perm() != tc.perm {
						t.Errorf("page %d: PTE → %#x perm %#x, want %#x perm %#x", i, e.Addr(), e.Perm(), buf+i*pg, tc.perm)
					}
				}
				if leaf(h, dma-off+pages*pg).Present() || leaf(h, dma-off-pg).Present() {
					t.Error("pages around the mapping are mapped")
				}
				// The upper levels grant everything: the leaf alone decides.
				for _, s := range h.M.IOMMU().Walk(dma)[:sacc.IOPTLevels-1] {
					if s.Entry.Perm() != sacc.PTERead|sacc.PTEWrite {
						t.Errorf("level %d entry perm %#x", s.Level, s.Entry.Perm())
					}
				}
				d.DMAUnmapSingle(dma, n, tc.dir)
				for i := range pages {
					if e := leaf(h, dma-off+i*pg); e != 0 {
						t.Errorf("page %d still has PTE %#x after unmap", i, uint64(e))
					}
				}
			})
		}
	}
}

// TestDevicePermissionsFollowTheDirection drives the device: each command reads
// its source and writes its destination, and the IOMMU allows exactly what the
// direction granted.
func TestDevicePermissionsFollowTheDirection(t *testing.T) {
	for _, tc := range []struct {
		name       string
		src, dst   kernel.Direction
		wantStatus sacc.Status
		reason     sacc.FaultReason
		access     uint8
		faultOnDst bool
	}{
		{"to-device → from-device", kernel.DMAToDevice, kernel.DMAFromDevice, sacc.StatusOK, 0, 0, false},
		{"bidirectional both", kernel.DMABidirectional, kernel.DMABidirectional, sacc.StatusOK, 0, 0, false},
		{"source mapped from-device", kernel.DMAFromDevice, kernel.DMAFromDevice, sacc.StatusBadAddress, sacc.FaultReadDenied, sacc.AccessRead, false},
		{"destination mapped to-device", kernel.DMAToDevice, kernel.DMAToDevice, sacc.StatusBadAddress, sacc.FaultWriteDenied, sacc.AccessWrite, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hosttest.Boot(t, withIOMMU)
			pd := h.Dev.PCI()
			data := pattern(pg, 9)
			src := hosttest.KernelBuffer(t, h, data)
			dst := hosttest.KernelBuffer(t, h, make([]byte, pg))
			s := mapSingle(t, pd, src, pg, tc.src)
			dd := mapSingle(t, pd, dst, pg, tc.dst)
			r, err := doMemcpy(h, s, dd, pg, false)
			if r.Status != tc.wantStatus {
				t.Fatalf("status %v (%v), want %v", r.Status, err, tc.wantStatus)
			}
			fs := faults(h)
			if tc.wantStatus == sacc.StatusOK {
				if err != nil || len(fs) != 0 || !bytes.Equal(ramBytes(h, dst, pg), data) {
					t.Fatalf("err %v faults %v", err, fs)
				}
				return
			}
			want := sacc.FaultRecord{IOVA: s, SourceID: 0x18, Reason: tc.reason, Access: tc.access}
			if tc.faultOnDst {
				want.IOVA = dd
			}
			if len(fs) != 1 || fs[0] != want {
				t.Fatalf("fault log %+v, want %+v", fs, want)
			}
			if !bytes.Equal(ramBytes(h, dst, pg), make([]byte, pg)) {
				t.Fatal("a faulting command wrote memory")
			}
		})
	}
}

// deviceUses maps a source and a destination page and has the device copy one
// into the other, so the IOTLB caches both.
func deviceUses(t *testing.T, h *host.Host) (src, dst, s, dd uint64) {
	t.Helper()
	pd := h.Dev.PCI()
	src = hosttest.KernelBuffer(t, h, pattern(pg, 1))
	dst = hosttest.KernelBuffer(t, h, make([]byte, pg))
	s = mapSingle(t, pd, src, pg, kernel.DMAToDevice)
	dd = mapSingle(t, pd, dst, pg, kernel.DMAFromDevice)
	if _, err := doMemcpy(h, s, dd, pg, false); err != nil {
		t.Fatal(err)
	}
	if !inIOTLB(h, s) || !inIOTLB(h, dd) {
		t.Fatalf("IOTLB %+v lacks the pages the device used", h.M.IOMMU().IOTLB())
	}
	return src, dst, s, dd
}

func TestStrictUnmapInvalidatesTheIOTLBAtOnce(t *testing.T) {
	h := hosttest.Boot(t, withIOMMU)
	pd := h.Dev.PCI()
	_, _, s, dd := deviceUses(t, h)
	flushes := h.K.Stats.IOTLBFlushes
	pd.DMAUnmapSingle(dd, pg, kernel.DMAFromDevice)
	if leaf(h, dd) != 0 {
		t.Error("PTE still present after unmap")
	}
	if inIOTLB(h, dd) {
		t.Error("IOTLB still holds the unmapped page")
	}
	if !inIOTLB(h, s) {
		t.Error("strict unmap flushed more than the unmapped page")
	}
	if got := h.K.Stats.IOTLBFlushes - flushes; got != 1 {
		t.Errorf("%d IOTLB flushes for one unmapped page, want 1", got)
	}
	// The device can no longer reach it.
	r, _ := doMemcpy(h, s, dd, pg, false)
	if r.Status != sacc.StatusBadAddress {
		t.Fatalf("copy to an unmapped IOVA: status %v", r.Status)
	}
	if fs := faults(h); len(fs) != 1 || fs[0].Reason != sacc.FaultNotPresent || fs[0].IOVA != dd {
		t.Fatalf("fault log %+v", fs)
	}
}

func TestStrictUnmapOfAMultiPageBufferInvalidatesEveryPage(t *testing.T) {
	h := hosttest.Boot(t, withIOMMU)
	pd := h.Dev.PCI()
	data := pattern(3*pg, 4)
	src := hosttest.KernelBuffer(t, h, data)
	dst := hosttest.KernelBuffer(t, h, make([]byte, 3*pg))
	s := mapSingle(t, pd, src, 3*pg, kernel.DMAToDevice)
	dd := mapSingle(t, pd, dst+0x100, 2*pg, kernel.DMAFromDevice) // three pages
	if _, err := doMemcpy(h, s, dd, 2*pg, false); err != nil {
		t.Fatal(err)
	}
	flushes := h.K.Stats.IOTLBFlushes
	pd.DMAUnmapSingle(dd, 2*pg, kernel.DMAFromDevice)
	for i := range uint64(3) {
		if inIOTLB(h, dd-0x100+i*pg) || leaf(h, dd-0x100+i*pg) != 0 {
			t.Errorf("page %d of the unmapped buffer survives", i)
		}
	}
	if got := h.K.Stats.IOTLBFlushes - flushes; got != 3 {
		t.Errorf("%d IOTLB flushes, want one per page (3)", got)
	}
}

func TestLazyUnmapLeavesTheIOTLBEntryUntilFlush(t *testing.T) {
	h := hosttest.Boot(t, withLazy)
	pd := h.Dev.PCI()
	_, _, s, dd := deviceUses(t, h)
	flushes := h.K.Stats.IOTLBFlushes
	pd.DMAUnmapSingle(dd, pg, kernel.DMAFromDevice)
	if leaf(h, dd) != 0 {
		t.Error("PTE still present after unmap")
	}
	if !inIOTLB(h, dd) {
		t.Fatal("lazy unmap invalidated the IOTLB at once")
	}
	if h.K.Stats.IOTLBFlushes != flushes {
		t.Fatal("lazy unmap flushed")
	}
	h.K.FlushIOTLB()
	if inIOTLB(h, dd) || inIOTLB(h, s) {
		t.Fatalf("IOTLB %+v after FlushIOTLB", h.M.IOMMU().IOTLB())
	}
	if got := h.K.Stats.IOTLBFlushes - flushes; got != 1 {
		t.Errorf("FlushIOTLB counted %d flushes, want 1 global flush", got)
	}
	h.K.FlushIOTLB() // nothing pending: no flush
	if got := h.K.Stats.IOTLBFlushes - flushes; got != 1 {
		t.Errorf("an empty FlushIOTLB flushed (%d)", got)
	}
}

func TestLazyUnmapFlushesAfterABatch(t *testing.T) {
	const batch = 32 // pages unmapped before the kernel flushes by itself
	h := hosttest.Boot(t, withLazy)
	pd := h.Dev.PCI()
	src := hosttest.KernelBuffer(t, h, pattern(pg, 2))
	s := mapSingle(t, pd, src, pg, kernel.DMAToDevice)
	flushes := h.K.Stats.IOTLBFlushes
	var first uint64
	for i := range batch {
		dst := hosttest.KernelBuffer(t, h, make([]byte, pg))
		dd := mapSingle(t, pd, dst, pg, kernel.DMAFromDevice)
		if i == 0 {
			first = dd
			if _, err := doMemcpy(h, s, dd, pg, false); err != nil {
				t.Fatal(err)
			}
		}
		pd.DMAUnmapSingle(dd, pg, kernel.DMAFromDevice)
		wantFlushes := uint64(0)
		if i == batch-1 {
			wantFlushes = 1
		}
		if got := h.K.Stats.IOTLBFlushes - flushes; got != wantFlushes {
			t.Fatalf("after %d unmaps: %d flushes, want %d", i+1, got, wantFlushes)
		}
		if stale := inIOTLB(h, first); stale != (i < batch-1) {
			t.Fatalf("after %d unmaps: stale entry present %v", i+1, stale)
		}
	}
}

// TestLazyUnmapLetsTheDeviceWriteAFreedBuffer is catalog hunt 13 seen from the
// kernel: with lazy invalidation, a buffer that was unmapped and freed is still
// reachable through the stale IOTLB entry, and the device writes into memory
// that now belongs to someone else.
func TestLazyUnmapLetsTheDeviceWriteAFreedBuffer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       host.Config
		reachable bool
	}{
		{"strict", withIOMMU, false},
		{"lazy", withLazy, true},
		{"no-iotlb-invalidate", iommuQuirk(quirk.NoIOTLBInvalidate, false), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hosttest.Boot(t, tc.cfg)
			pd := h.Dev.PCI()
			_, dst, s, dd := deviceUses(t, h)
			pd.DMAUnmapSingle(dd, pg, kernel.DMAFromDevice)
			h.K.FreePages(dst, pg)
			// The page goes to a new owner, who fills it.
			owner, err := h.K.AllocPages(pg)
			if err != nil || owner != dst {
				t.Fatalf("reallocation got %#x (%v), want the freed %#x", owner, err, dst)
			}
			mine := bytes.Repeat([]byte{0x5A}, pg)
			h.M.RAM().Write(owner, mine)
			// A late command to the stale IOVA (the source is still mapped).
			r, err := doMemcpy(h, s, dd, pg, false)
			got := ramBytes(h, owner, pg)
			if tc.reachable {
				if err != nil || r.Status != sacc.StatusOK {
					t.Fatalf("copy through the stale entry: %v (status %v)", err, r.Status)
				}
				if !bytes.Equal(got, pattern(pg, 1)) {
					t.Fatal("the freed page did not change")
				}
				if len(faults(h)) != 0 {
					t.Fatalf("faults %+v", faults(h))
				}
				return
			}
			if r.Status != sacc.StatusBadAddress || !bytes.Equal(got, mine) {
				t.Fatalf("strict: status %v, page changed %v", r.Status, !bytes.Equal(got, mine))
			}
		})
	}
}

// TestLazyUnmapDoesNotReuseAnIOVABeforeTheFlush: a correct driver maps a new
// buffer after unmapping an old one. If the new mapping were given the old
// buffer's IOVA while the IOTLB still held it, the device would write the old
// (freed) buffer instead of the new one. Linux's flush queue frees IOVAs only
// after the invalidation for that reason.
func TestLazyUnmapDoesNotReuseAnIOVABeforeTheFlush(t *testing.T) {
	h := hosttest.Boot(t, withLazy)
	pd := h.Dev.PCI()
	src1, dst1, s1, dd1 := deviceUses(t, h)
	pd.DMAUnmapSingle(dd1, pg, kernel.DMAFromDevice)
	pd.DMAUnmapSingle(s1, pg, kernel.DMAToDevice)
	data2 := pattern(pg, 0x77)
	src2 := hosttest.KernelBuffer(t, h, data2)
	dst2 := hosttest.KernelBuffer(t, h, make([]byte, pg))
	s2 := mapSingle(t, pd, src2, pg, kernel.DMAToDevice)
	dd2 := mapSingle(t, pd, dst2, pg, kernel.DMAFromDevice)
	if dd2 == dd1 || s2 == s1 || dd2 == s1 || s2 == dd1 {
		t.Errorf("IOVAs reused before the flush: old %#x %#x, new %#x %#x", s1, dd1, s2, dd2)
	}
	if _, err := doMemcpy(h, s2, dd2, pg, false); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ramBytes(h, dst2, pg), data2) {
		t.Error("the new buffer did not receive the copy")
	}
	if !bytes.Equal(ramBytes(h, dst1, pg), pattern(pg, 1)) {
		t.Error("the old, unmapped buffer was written")
	}
	_ = src1
	// After a flush the ranges are free again.
	pd.DMAUnmapSingle(dd2, pg, kernel.DMAFromDevice)
	pd.DMAUnmapSingle(s2, pg, kernel.DMAToDevice)
	h.K.FlushIOTLB()
	a := mapSingle(t, pd, src2, pg, kernel.DMAToDevice)
	if a != min(s1, dd1, s2, dd2) {
		t.Errorf("after the flush the lowest freed IOVA %#x is not reused (got %#x)", min(s1, dd1, s2, dd2), a)
	}
}

func TestNoIOTLBInvalidateNeverInvalidates(t *testing.T) {
	for _, lazy := range []bool{false, true} {
		t.Run(map[bool]string{false: "strict", true: "lazy"}[lazy], func(t *testing.T) {
			h := hosttest.Boot(t, iommuQuirk(quirk.NoIOTLBInvalidate, lazy))
			pd := h.Dev.PCI()
			_, _, s, dd := deviceUses(t, h)
			flushes := h.K.Stats.IOTLBFlushes
			pd.DMAUnmapSingle(dd, pg, kernel.DMAFromDevice)
			pd.DMAUnmapSingle(s, pg, kernel.DMAToDevice)
			if leaf(h, dd) != 0 || leaf(h, s) != 0 {
				t.Fatal("unmap did not clear the PTEs")
			}
			h.K.FlushIOTLB()
			// Many more unmaps than a lazy batch.
			buf := hosttest.KernelBuffer(t, h, make([]byte, pg))
			for range 40 {
				pd.DMAUnmapSingle(mapSingle(t, pd, buf, pg, kernel.DMABidirectional), pg, kernel.DMABidirectional)
			}
			h.K.FlushIOTLB()
			if !inIOTLB(h, dd) || !inIOTLB(h, s) {
				t.Fatal("the stale entries were invalidated")
			}
			if h.K.Stats.IOTLBFlushes != flushes {
				t.Fatalf("%d flushes counted", h.K.Stats.IOTLBFlushes-flushes)
			}
		})
	}
}

func TestFirstPageOnlyMapsOnlyTheFirstPage(t *testing.T) {
	h := hosttest.Boot(t, iommuQuirk(quirk.FirstPageOnly, false))
	pd := h.Dev.PCI()
	data := pattern(2*pg, 6)
	src := hosttest.KernelBuffer(t, h, data)
	dst := hosttest.KernelBuffer(t, h, make([]byte, 2*pg))
	s := mapSingle(t, pd, src, 2*pg, kernel.DMAToDevice)
	dd := mapSingle(t, pd, dst, 2*pg, kernel.DMAFromDevice)
	for _, iova := range []uint64{s, dd} {
		if !leaf(h, iova).Present() {
			t.Fatalf("first page of %#x not mapped", iova)
		}
		if leaf(h, iova+pg).Present() {
			t.Fatalf("second page of %#x mapped despite the quirk", iova)
		}
	}
	// One page works.
	if _, err := doMemcpy(h, s, dd, pg, false); err != nil {
		t.Fatalf("one-page copy: %v", err)
	}
	// Two pages fault on the source's second page, before anything moves.
	h.M.RAM().Fill(dst, 2*pg, 0)
	r, err := doMemcpy(h, s, dd, 2*pg, false)
	if err == nil || r.Status != sacc.StatusBadAddress || r.ResultLen != 0 {
		t.Fatalf("two-page copy: %v, status %v, result_len %d; want status 2", err, r.Status, r.ResultLen)
	}
	want := sacc.FaultRecord{IOVA: s + pg, SourceID: sacc.SourceID(0, 3, 0), Reason: sacc.FaultNotPresent, Access: sacc.AccessRead}
	if fs := faults(h); len(fs) != 1 || fs[0] != want {
		t.Fatalf("fault log %+v, want %+v", fs, want)
	}
	if h.M.IOMMU().State().STATUS&sacc.IOMMUStatusFaultsLog == 0 {
		t.Error("IOMMU STATUS does not report a logged fault")
	}
	if !bytes.Equal(ramBytes(h, dst, 2*pg), make([]byte, 2*pg)) {
		t.Fatal("a faulting command wrote memory")
	}
	// Coherent memory is not affected by the quirk.
	_, cdma, err := pd.DMAAllocCoherent(2 * pg)
	if err != nil || !leaf(h, cdma+pg).Present() {
		t.Fatalf("coherent second page not mapped (%v)", err)
	}
}

func TestIOVARangesAreReusedAfterUnmap(t *testing.T) {
	h, d := bare(t, withIOMMU)
	buf, _ := h.K.AllocPages(8 * pg)
	a := mapSingle(t, d, buf, 3*pg, kernel.DMABidirectional)
	b := mapSingle(t, d, buf, pg, kernel.DMABidirectional)
	if b != a+3*pg {
		t.Fatalf("second mapping at %#x, want right after the first (%#x)", b, a+3*pg)
	}
	d.DMAUnmapSingle(a, 3*pg, kernel.DMABidirectional)
	for _, tc := range []struct {
		name string
		off  uint64
		n    uint64
		want uint64
	}{
		{"fits the hole", 0, 2 * pg, a},
		{"fills the rest of the hole", 0x80, pg - 0x80, a + 2*pg + 0x80},
		{"does not fit anywhere before", 0, 2 * pg, b + pg},
	} {
		if got := mapSingle(t, d, buf+tc.off, tc.n, kernel.DMAToDevice); got != tc.want {
			t.Fatalf("%s: IOVA %#x, want %#x", tc.name, got, tc.want)
		}
	}
}

func TestDMASyncIsANoOpOnACoherentCPU(t *testing.T) {
	h, d := bare(t, withIOMMU)
	buf := hosttest.KernelBuffer(t, h, pattern(pg, 1))
	dma := mapSingle(t, d, buf, pg, kernel.DMABidirectional)
	before := h.CPU.Stats()
	d.DMASyncSingleForCPU(dma, pg, kernel.DMABidirectional)
	d.DMASyncSingleForDevice(dma, pg, kernel.DMABidirectional)
	if h.CPU.Stats() != before {
		t.Fatalf("syncs on a coherent CPU did work: %+v → %+v", before, h.CPU.Stats())
	}
}

// ---------------------------------------------------------------------------
// Scatter-gather

// scattered allocates n single pages with a gap after each, so no two touch.
func scattered(t *testing.T, h *host.Host, n int) []uint64 {
	t.Helper()
	var pages []uint64
	for range n {
		p, err := h.K.AllocPages(pg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.K.AllocPages(pg); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p)
	}
	return pages
}

func TestDMAMapSGMakesOneContiguousIOVARange(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  kernel.Direction
		perm uint64
	}{
		{"to-device", kernel.DMAToDevice, sacc.PTERead},
		{"from-device", kernel.DMAFromDevice, sacc.PTEWrite},
		{"bidirectional", kernel.DMABidirectional, sacc.PTERead | sacc.PTEWrite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hosttest.Boot(t, withIOMMU)
			pd := h.Dev.PCI()
			p := scattered(t, h, 3)
			sg := []kernel.SG{{Phys: p[0] + 0x300, Len: pg - 0x300}, {Phys: p[1], Len: pg}, {Phys: p[2], Len: 0x123}}
			var want []byte
			for i, e := range sg {
				b := pattern(int(e.Len), byte(0x10*i))
				h.M.RAM().Write(e.Phys, b)
				want = append(want, b...)
			}
			n, err := pd.DMAMapSG(sg, tc.dir)
			if err != nil || n != 1 {
				t.Fatalf("DMAMapSG = %d, %v; want 1", n, err)
			}
			total := uint64(len(want))
			if sg[0].DMAAddr < kernel.IOVABase || sg[0].DMAAddr&sacc.PageMask != 0x300 || sg[0].DMALen != total {
				t.Fatalf("entry 0 dma %#x len %#x, want offset 0x300 len %#x", sg[0].DMAAddr, sg[0].DMALen, total)
			}
			for i, e := range sg[1:] {
				if e.DMAAddr != 0 || e.DMALen != 0 {
					t.Errorf("entry %d carries dma %#x len %#x", i+1, e.DMAAddr, e.DMALen)
				}
			}
			base := sg[0].DMAAddr &^ sacc.PageMask
			for i, phys := range p {
				if e := leaf(h, base+uint64(i)*pg); e.Addr() != phys || e.Perm() != tc.perm {
					t.Errorf("IOVA page %d → %#x perm %#x, want %#x perm %#x", i, e.Addr(), e.Perm(), phys, tc.perm)
				}
			}
			if leaf(h, base+3*pg).Present() {
				t.Error("a fourth page is mapped")
			}
			if tc.dir != kernel.DMAFromDevice {
				// The device reads the scattered pieces as one buffer.
				dst := hosttest.KernelBuffer(t, h, make([]byte, total))
				dd := mapSingle(t, pd, dst, total, kernel.DMAFromDevice)
				if _, err := doMemcpy(h, sg[0].DMAAddr, dd, uint32(total), false); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(ramBytes(h, dst, total), want) {
					t.Fatal("the device did not read the pieces in order")
				}
			}
			pd.DMAUnmapSG(sg, tc.dir)
			for i := range p {
				if leaf(h, base+uint64(i)*pg) != 0 || inIOTLB(h, base+uint64(i)*pg) {
					t.Errorf("IOVA page %d survives DMAUnmapSG", i)
				}
			}
		})
	}
}

func TestDMAMapSGWithoutIOMMUKeepsEachPiece(t *testing.T) {
	h, d := bare(t, host.Config{})
	p := scattered(t, h, 3)
	sg := []kernel.SG{{Phys: p[0] + 0x300, Len: pg - 0x300}, {Phys: p[1], Len: pg}, {Phys: p[2], Len: 0x123}}
	n, err := d.DMAMapSG(sg, kernel.DMAToDevice)
	if err != nil || n != len(sg) {
		t.Fatalf("DMAMapSG = %d, %v; want %d", n, err, len(sg))
	}
	for i, e := range sg {
		if e.DMAAddr != e.Phys || e.DMALen != e.Len {
			t.Errorf("entry %d: dma %#x len %#x, want %#x %#x", i, e.DMAAddr, e.DMALen, e.Phys, e.Len)
		}
	}
	d.DMAUnmapSG(sg, kernel.DMAToDevice)
}

func TestDMAMapSGRefusesMisalignedMiddlePieces(t *testing.T) {
	for _, iommu := range []bool{false, true} {
		for _, tc := range []struct {
			name string
			sg   func(p []uint64) []kernel.SG
			ok   bool
		}{
			{"one piece in the middle of a page", func(p []uint64) []kernel.SG { return []kernel.SG{{Phys: p[0] + 0x10, Len: 0x20}} }, true},
			{"first starts mid-page, last ends mid-page", func(p []uint64) []kernel.SG {
				return []kernel.SG{{Phys: p[0] + 0x800, Len: 0x800}, {Phys: p[1], Len: 0x10}}
			}, true},
			{"second piece starts mid-page", func(p []uint64) []kernel.SG {
				return []kernel.SG{{Phys: p[0], Len: pg}, {Phys: p[1] + 8, Len: pg - 8}, {Phys: p[2], Len: pg}}
			}, false},
			{"first piece ends mid-page", func(p []uint64) []kernel.SG {
				return []kernel.SG{{Phys: p[0], Len: 0x800}, {Phys: p[1], Len: pg}}
			}, false},
			{"middle piece ends mid-page", func(p []uint64) []kernel.SG {
				return []kernel.SG{{Phys: p[0], Len: pg}, {Phys: p[1], Len: 0x10}, {Phys: p[2], Len: pg}}
			}, false},
			{"last piece starts mid-page", func(p []uint64) []kernel.SG {
				return []kernel.SG{{Phys: p[0], Len: pg}, {Phys: p[1] + 0x10, Len: 0x10}}
			}, false},
		} {
			t.Run(fmt.Sprintf("iommu=%v/%s", iommu, tc.name), func(t *testing.T) {
				h, d := bare(t, host.Config{Kernel: kernel.Config{IOMMU: iommu}})
				p := scattered(t, h, 3)
				probe := mapSingle(t, d, p[0], pg, kernel.DMAToDevice) // the next free DMA address
				d.DMAUnmapSingle(probe, pg, kernel.DMAToDevice)
				sg := tc.sg(p)
				n, err := d.DMAMapSG(sg, kernel.DMAToDevice)
				if tc.ok {
					if err != nil || n < 1 {
						t.Fatalf("DMAMapSG = %d, %v", n, err)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), "not page-aligned") {
					t.Fatalf("DMAMapSG = %d, %v; want a refusal", n, err)
				}
				if got := mapSingle(t, d, p[0], pg, kernel.DMAToDevice); got != probe {
					t.Errorf("a refused scatterlist used DMA space: next mapping at %#x, want %#x", got, probe)
				}
			})
		}
	}
}

func TestDMAAllocCoherentOutOfMemory(t *testing.T) {
	for _, iommu := range []bool{false, true} {
		h, d := bare(t, host.Config{Kernel: kernel.Config{IOMMU: iommu}, Machine: machine.Config{RAMSize: 8 << 20}})
		before := h.K.MemInUse()
		if _, _, err := d.DMAAllocCoherent(8 << 20); err == nil || !strings.Contains(err.Error(), "out of memory") {
			t.Fatalf("iommu=%v: coherent allocation larger than RAM: %v", iommu, err)
		}
		if h.K.MemInUse() != before {
			t.Fatalf("iommu=%v: a failed allocation left %#x bytes", iommu, h.K.MemInUse()-before)
		}
		// What fits still works.
		if _, _, err := d.DMAAllocCoherent(pg); err != nil {
			t.Fatalf("iommu=%v: %v", iommu, err)
		}
	}
}

// ---------------------------------------------------------------------------
// DMA masks

func TestDMABitMask(t *testing.T) {
	for n, want := range map[uint]uint64{0: 0, 12: 0xFFF, 32: 0xFFFF_FFFF, 48: 1<<48 - 1, 63: 1<<63 - 1, 64: ^uint64(0)} {
		if got := kernel.DMABitMask(n); got != want {
			t.Errorf("DMABitMask(%d) = %#x, want %#x", n, got, want)
		}
	}
}

func TestDMASetMaskAndCoherent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    host.Config
		lowest uint64 // the lowest DMA address the platform hands out
	}{
		{"no IOMMU", host.Config{}, 1 << 20},
		{"IOMMU", withIOMMU, kernel.IOVABase},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, d := bare(t, tc.cfg)
			if got := d.DMAMask(); got != kernel.DMABitMask(32) {
				t.Fatalf("a device starts with mask %#x, want 32 bits", got)
			}
			// A mask that reaches no page the platform can hand out is refused.
			for _, mask := range []uint64{0, kernel.DMABitMask(12), tc.lowest - 1, tc.lowest + pg - 2} {
				if err := d.DMASetMaskAndCoherent(mask); !errors.Is(err, kernel.EIO) {
					t.Errorf("mask %#x: %v, want EIO", mask, err)
				}
				if got := d.DMAMask(); got != kernel.DMABitMask(32) {
					t.Fatalf("a refused mask %#x changed the mask to %#x", mask, got)
				}
			}
			for _, mask := range []uint64{tc.lowest + pg - 1, kernel.DMABitMask(40), kernel.DMABitMask(64)} {
				if err := d.DMASetMaskAndCoherent(mask); err != nil {
					t.Errorf("mask %#x: %v", mask, err)
				}
				if got := d.DMAMask(); got != mask {
					t.Errorf("mask %#x set, DMAMask says %#x", mask, got)
				}
			}
		})
	}
}

// TestDMAMaskHonouredWithoutIOMMU: coherent memory comes from below the mask
// until there is none left, and a streaming mapping of memory above it fails,
// since there is no bounce buffer to copy through.
func TestDMAMaskHonouredWithoutIOMMU(t *testing.T) {
	h, d := bare(t, host.Config{})
	low := hosttest.KernelBuffer(t, h, pattern(pg, 1)) // allocated first: low in RAM
	const mask = 4<<20 - 1
	if err := d.DMASetMaskAndCoherent(mask); err != nil {
		t.Fatal(err)
	}
	n := 0
	for ; ; n++ {
		cpu, dma, err := d.DMAAllocCoherent(pg)
		if err != nil {
			if !strings.Contains(err.Error(), "out of memory") || !strings.Contains(err.Error(), "below 0x400000") {
				t.Fatalf("allocation %d: %v", n, err)
			}
			break
		}
		if dma != cpu || dma+pg-1 > mask {
			t.Fatalf("allocation %d at cpu %#x dma %#x, beyond mask %#x", n, cpu, dma, mask)
		}
	}
	if n < 512 {
		t.Fatalf("only %d pages below a 4 MiB mask", n)
	}
	high := hosttest.KernelBuffer(t, h, pattern(pg, 2)) // the memory below the mask is gone
	if high <= mask {
		t.Fatalf("a kernel buffer at %#x after the low memory ran out", high)
	}
	if got := mapSingle(t, d, low, pg, kernel.DMAToDevice); got != low {
		t.Errorf("a reachable buffer maps at %#x, want %#x", got, low)
	}
	if dma, err := d.DMAMapSingle(high, pg, kernel.DMAToDevice); !errors.Is(err, kernel.EIO) {
		t.Errorf("DMAMapSingle of %#x above mask %#x = %#x, %v; want EIO", high, uint64(mask), dma, err)
	}
	if _, err := d.DMAMapSingle(mask-pg/2+1, pg, kernel.DMAToDevice); !errors.Is(err, kernel.EIO) {
		t.Errorf("a buffer that crosses the mask mapped: %v", err)
	}
	sg := []kernel.SG{{Phys: low, Len: pg}, {Phys: high, Len: pg}}
	if n, err := d.DMAMapSG(sg, kernel.DMAToDevice); !errors.Is(err, kernel.EIO) {
		t.Errorf("DMAMapSG with a piece above the mask = %d, %v; want EIO", n, err)
	}
}

// TestDMAMaskHonouredBehindIOMMU: behind the IOMMU the page may be anywhere, the
// IOVA must be below the mask.
func TestDMAMaskHonouredBehindIOMMU(t *testing.T) {
	h, d := bare(t, withIOMMU)
	const pages = 8
	mask := uint64(kernel.IOVABase + pages*pg - 1)
	if err := d.DMASetMaskAndCoherent(mask); err != nil {
		t.Fatal(err)
	}
	type alloc struct{ cpu, dma uint64 }
	var got []alloc
	for {
		cpu, dma, err := d.DMAAllocCoherent(pg)
		if err != nil {
			if !strings.Contains(err.Error(), "IOVA space exhausted") {
				t.Fatalf("allocation %d: %v", len(got), err)
			}
			break
		}
		if dma+pg-1 > mask {
			t.Fatalf("IOVA %#x beyond mask %#x", dma, mask)
		}
		got = append(got, alloc{cpu, dma})
	}
	if len(got) != pages {
		t.Fatalf("%d coherent pages below the mask, want %d", len(got), pages)
	}
	buf := hosttest.KernelBuffer(t, h, pattern(pg, 3))
	if _, err := d.DMAMapSingle(buf, pg, kernel.DMAToDevice); err == nil {
		t.Fatal("a streaming mapping found IOVA space above the mask")
	}
	if _, err := d.DMAMapSG([]kernel.SG{{Phys: buf, Len: pg}}, kernel.DMAToDevice); err == nil {
		t.Fatal("a scatterlist found IOVA space above the mask")
	}
	d.DMAFreeCoherent(pg, got[3].cpu, got[3].dma)
	if dma := mapSingle(t, d, buf, pg, kernel.DMAToDevice); dma != got[3].dma {
		t.Errorf("the freed IOVA %#x was not reused: %#x", got[3].dma, dma)
	}
}
