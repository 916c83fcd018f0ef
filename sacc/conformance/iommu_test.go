package conformance

import (
	"testing"

	"github.com/saccbook/saccbook/sacc"
)

// §10: "CAP: bits 7:0 IOTLB entries (32); bits 11:8 page-table levels (4); bits
// 19:12 input address width (48)".
func TestIOMMUCapRegister(t *testing.T) {
	c := newClient(t)
	cp := c.iommuRead32(sacc.IOMMURegCAP)
	if cp != sacc.IOMMUCapValue {
		t.Errorf("CAP = 0x%08x, want 0x%08x", cp, sacc.IOMMUCapValue)
	}
	if n := cp & 0xFF; n != sacc.IOTLBEntries {
		t.Errorf("CAP IOTLB entries = %d, want 32", n)
	}
	if n := cp >> 8 & 0xF; n != sacc.IOPTLevels {
		t.Errorf("CAP levels = %d, want 4", n)
	}
	if n := cp >> 12 & 0xFF; n != sacc.IOVAWidth {
		t.Errorf("CAP address width = %d, want 48", n)
	}
	c.iommuWrite32(sacc.IOMMURegCAP, 0)
	if v := c.iommuRead32(sacc.IOMMURegCAP); v != cp {
		t.Errorf("CAP = 0x%08x after a write, want 0x%08x (RO)", v, cp)
	}
}

// §10: CTRL bit 0 TRANSLATE_ENABLE (RW); STATUS "bit 0 translation active".
func TestIOMMUStatusReflectsTranslateEnable(t *testing.T) {
	c := newClient(t)
	pt := newIOPageTables(c)
	c.iommuWrite64(sacc.IOMMURegPTRoot, pt.root)
	if v := c.iommuRead32(sacc.IOMMURegSTATUS); v != 0 {
		t.Errorf("IOMMU STATUS = 0x%x before translation is enabled, want 0", v)
	}
	c.iommuWrite32(sacc.IOMMURegCTRL, sacc.IOMMUCtrlTranslate)
	if v := c.iommuRead32(sacc.IOMMURegCTRL); v&sacc.IOMMUCtrlTranslate == 0 {
		t.Errorf("IOMMU CTRL = 0x%x after enabling, want bit 0 set", v)
	}
	if v := c.iommuRead32(sacc.IOMMURegSTATUS); v&sacc.IOMMUStatusActive == 0 {
		t.Errorf("IOMMU STATUS = 0x%x with translation enabled, want bit 0 set", v)
	}
	c.iommuWrite32(sacc.IOMMURegCTRL, 0)
	if v := c.iommuRead32(sacc.IOMMURegSTATUS); v&sacc.IOMMUStatusActive != 0 {
		t.Errorf("IOMMU STATUS = 0x%x with translation disabled, want bit 0 clear", v)
	}
}

// §10: PT_ROOT, FAULT_BASE and FAULT_MSI_ADDR are RW 64-bit; FAULT_SIZE, FAULT_HEAD
// and FAULT_MSI_DATA RW 32-bit; FAULT_TAIL is RO.
func TestIOMMURegistersHoldValues(t *testing.T) {
	c := newClient(t)
	regs64 := map[uint64]uint64{
		sacc.IOMMURegPTRoot:       0x0000_0001_2345_6000,
		sacc.IOMMURegFaultBase:    0x0000_0002_3456_7000,
		sacc.IOMMURegFaultMSIAddr: 0x0000_0000_FEE0_1000,
	}
	for off, v := range regs64 {
		c.iommuWrite64(off, v)
	}
	c.iommuWrite32(sacc.IOMMURegFaultSize, 64)
	c.iommuWrite32(sacc.IOMMURegFaultMSIData, 0xABCD_0042)
	c.iommuWrite32(sacc.IOMMURegFaultTail, 7)
	for off, v := range regs64 {
		if got := c.iommuRead64(off); got != v {
			t.Errorf("%s = 0x%x, want 0x%x", sacc.IOMMURegName(uint32(off)), got, v)
		}
	}
	if v := c.iommuRead32(sacc.IOMMURegFaultSize); v != 64 {
		t.Errorf("FAULT_SIZE = %d, want 64", v)
	}
	if v := c.iommuRead32(sacc.IOMMURegFaultMSIData); v != 0xABCD_0042 {
		t.Errorf("FAULT_MSI_DATA = 0x%x, want 0xabcd0042", v)
	}
	if v := c.iommuRead32(sacc.IOMMURegFaultTail); v != 0 {
		t.Errorf("FAULT_TAIL = %d after a write, want 0 (RO)", v)
	}
}

// §10: "With translation disabled, DMA addresses are physical addresses
// (passthrough)" — whatever PT_ROOT holds.
func TestIOMMUPassthroughWhenDisabled(t *testing.T) {
	d := newDevice(t)
	pt := newIOPageTables(d.client) // empty tables: translating would fault
	d.iommuWrite64(sacc.IOMMURegPTRoot, pt.root)
	d.iommuWrite64(sacc.IOMMURegFaultBase, faultLog)
	d.iommuWrite32(sacc.IOMMURegFaultSize, 16)
	d.programRings(sqRing, 8, cqRing, 8)
	d.enable()
	data := pattern(3000, 0x21)
	d.write(bufBase+0x800, data)
	expectCompletion(t, d.submitAndRun(memcpyDesc(bufBase+0x800, bufBase+0x5000, 3000, 1))[0], 1, sacc.StatusOK, 3000)
	d.expectBytes("destination", bufBase+0x5000, data)
	d.expectFaults()
}

// §10: "I/O page tables: 4 levels of 512 eight-byte entries (IOVA bits 47:39,
// 38:30, 29:21, 20:12), 4 KiB pages ... bits 51:12 = the physical address of the
// next table or of the page." Rings and buffers at IOVAs that differ at every level
// land on scattered physical pages.
func TestIOMMUTranslatesFourLevels(t *testing.T) {
	const (
		sqIOVA  = 0x0000_1234_5678_9000
		cqIOVA  = 0x0000_FFFF_FFFF_F000 // the last page below 2^48
		srcIOVA = 0x0000_0040_0000_0000
		dstIOVA = 0x0000_8000_4000_0000
	)
	srcPhys := []uint64{bufBase + 0x5000, bufBase + 0x1000}   // two pages, out of order
	dstPhys := []uint64{bufBase + 0x30000, bufBase + 0x20000} // likewise
	d := newDevice(t)
	pt := newIOPageTables(d.client)
	pt.mapRange(sqIOVA, sqRing, sacc.PageSize, sacc.PTERead)
	pt.mapRange(cqIOVA, cqRing, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
	for i := range 2 {
		pt.mapRange(srcIOVA+uint64(i)*sacc.PageSize, srcPhys[i], sacc.PageSize, sacc.PTERead)
		pt.mapRange(dstIOVA+uint64(i)*sacc.PageSize, dstPhys[i], sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
	}
	pt.enableIOMMU(16)
	d.programRings(sqIOVA, 8, cqIOVA, 8)
	d.enable()

	page0, page1 := pattern(sacc.PageSize, 0x61), pattern(sacc.PageSize, 0x62)
	d.write(srcPhys[0], page0)
	d.write(srcPhys[1], page1)
	d.memset(dstPhys[0], sacc.PageSize, guard)
	d.memset(dstPhys[1], sacc.PageSize, guard)

	// The descriptor goes to the SQ's physical page; the device finds it by IOVA.
	d.sqBase, d.cqBase = sqRing, cqRing
	desc := memcpyDesc(srcIOVA+0x800, dstIOVA+0x400, sacc.PageSize, 0x4147)
	expectCompletion(t, d.submitAndRun(desc)[0], 0x4147, sacc.StatusOK, sacc.PageSize)

	copied := append(append([]byte{}, page0[0x800:]...), page1[:0x800]...)
	d.expectBytes("first destination page", dstPhys[0]+0x400, copied[:0xC00])
	d.expectBytes("second destination page", dstPhys[1], copied[0xC00:])
	d.expectUntouched("start of the first destination page", dstPhys[0], 0x400)
	d.expectUntouched("end of the second destination page", dstPhys[1]+0x400, sacc.PageSize-0x400)
	d.expectFaults()

	// Translation is really on: the buffers' physical addresses are not mapped.
	desc = memcpyDesc(srcPhys[0], dstPhys[0], 16, 0x4148)
	expectCompletion(t, d.submitAndRun(desc)[0], 0x4148, sacc.StatusBadAddress, 0)
	d.expectFaults(fault(srcPhys[0], sacc.FaultNotPresent, sacc.AccessRead))
}

// §10: "An entry with neither bit is not present"; a fault record carries the IOVA,
// the source ID bus << 8 | device << 3 | function (0x0018 for 00:03.0), reason 1,
// access 0 for a read; FAULT_TAIL advances and STATUS bit 1 says the log is not
// empty until FAULT_HEAD catches up. §10: "the device sees it as a bad address
// (status 2)".
func TestIOMMUFaultNotPresentLogsRecord(t *testing.T) {
	const mapped = 0x0000_0033_0000_0000
	cases := []struct {
		name  string
		iova  uint64
		setup func(pt *ioPageTables)
	}{
		{"no top-level entry", 0x0000_7700_0000_0000, func(*ioPageTables) {}},
		{"no leaf entry", mapped + 0x5000, func(*ioPageTables) {}},
		{"leaf entry without read or write", mapped + 0x6000, func(pt *ioPageTables) {
			pt.setLeaf(mapped+0x6000, sacc.MakePTE(bufBase+0x6000, 0))
		}},
		{"top-level entry without read or write", 0x0000_7800_0000_0000, func(pt *ioPageTables) {
			pt.mapRange(0x0000_7800_0000_0000, bufBase+0x7000, sacc.PageSize, sacc.PTERead)
			slot := pt.root + sacc.IOVAIndex(0x0000_7800_0000_0000, 0)*sacc.IOPTEntrySize
			pt.c.writeq(slot, uint64(sacc.MakePTE(pt.tables[[2]uint64{1, 0x0000_7800_0000_0000 >> 39}], 0)))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, pt := newTranslatedDevice(t, 8, 8)
			pt.mapRange(mapped, bufBase, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
			tc.setup(pt)
			expectCompletion(t, d.submitAndRun(memcpyDesc(tc.iova, mapped, 64, 0xF0))[0], 0xF0, sacc.StatusBadAddress, 0)
			d.expectFaults(fault(tc.iova, sacc.FaultNotPresent, sacc.AccessRead))
			if ec := d.reg(sacc.RegErrCode); ec != uint32(sacc.StatusBadAddress) {
				t.Errorf("ERR_CODE = %d, want 2", ec)
			}
			d.expectRunning()

			st := d.iommuRead32(sacc.IOMMURegSTATUS)
			if st != sacc.IOMMUStatusActive|sacc.IOMMUStatusFaultsLog {
				t.Errorf("IOMMU STATUS = 0x%x with one record logged, want 0x3", st)
			}
			d.iommuWrite32(sacc.IOMMURegFaultHead, 1)
			if st := d.iommuRead32(sacc.IOMMURegSTATUS); st != sacc.IOMMUStatusActive {
				t.Errorf("IOMMU STATUS = 0x%x after FAULT_HEAD caught up, want 0x1", st)
			}
		})
	}
}

// §10: fault reason 2, "write not allowed", access 1 (write): a destination mapped
// read-only. Nothing is written.
func TestIOMMUWriteToReadOnlyIsReason2(t *testing.T) {
	const src, dst = 0x0000_0010_0000_0000, 0x0000_0020_0000_0000
	d, pt := newTranslatedDevice(t, 8, 8)
	pt.mapRange(src, bufBase, sacc.PageSize, sacc.PTERead)
	pt.mapRange(dst, bufBase+0x1000, sacc.PageSize, sacc.PTERead)
	d.memset(bufBase+0x1000, 64, guard)
	expectCompletion(t, d.submitAndRun(memcpyDesc(src, dst, 64, 1))[0], 1, sacc.StatusBadAddress, 0)
	d.expectFaults(fault(dst, sacc.FaultWriteDenied, sacc.AccessWrite))
	d.expectUntouched("read-only destination", bufBase+0x1000, 64)
}

// §10: fault reason 3, "read not allowed", access 0 (read): a source mapped
// write-only.
func TestIOMMUReadFromWriteOnlyIsReason3(t *testing.T) {
	const src, dst = 0x0000_0010_0000_0000, 0x0000_0020_0000_0000
	d, pt := newTranslatedDevice(t, 8, 8)
	pt.mapRange(src, bufBase, sacc.PageSize, sacc.PTEWrite)
	pt.mapRange(dst, bufBase+0x1000, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
	d.memset(bufBase+0x1000, 64, guard)
	expectCompletion(t, d.submitAndRun(memcpyDesc(src, dst, 64, 1))[0], 1, sacc.StatusBadAddress, 0)
	d.expectFaults(fault(src, sacc.FaultReadDenied, sacc.AccessRead))
	d.expectUntouched("destination", bufBase+0x1000, 64)
}

// §10: fault reason 4, "address beyond 48 bits".
func TestIOMMUAddressBeyond48BitsIsReason4(t *testing.T) {
	const ok = 0x0000_0010_0000_0000
	cases := []struct {
		name string
		desc sacc.Descriptor
		want sacc.FaultRecord
	}{
		{"source at 2^48", memcpyDesc(sacc.IOVALimit, ok, 64, 1), fault(sacc.IOVALimit, sacc.FaultAddressWidth, sacc.AccessRead)},
		{"source at 2^63", memcpyDesc(1<<63, ok, 64, 1), fault(1<<63, sacc.FaultAddressWidth, sacc.AccessRead)},
		{"destination at 2^48 + 2^47", memcpyDesc(ok, sacc.IOVALimit|1<<47, 64, 1), fault(sacc.IOVALimit|1<<47, sacc.FaultAddressWidth, sacc.AccessWrite)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, pt := newTranslatedDevice(t, 8, 8)
			pt.mapRange(ok, bufBase, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
			// The low 48 bits of the wide address are mapped too: they must not be used.
			pt.mapRange(tc.desc.Src&(sacc.IOVALimit-1), bufBase, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
			pt.mapRange(tc.desc.Dst&(sacc.IOVALimit-1), bufBase, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
			expectCompletion(t, d.submitAndRun(tc.desc)[0], 1, sacc.StatusBadAddress, 0)
			d.expectFaults(tc.want)
		})
	}
}

// §10: "A failed command logs at most one IOMMU fault" (§6.3 v1: the device "stops
// at the first page that fails").
func TestFailedCommandLogsAtMostOneFault(t *testing.T) {
	const good, bad = 0x0000_0010_0000_0000, 0x0000_0050_0000_0000
	cases := []struct {
		name string
		desc sacc.Descriptor
		want sacc.FaultRecord
	}{
		{"three-page source and destination unmapped", memcpyDesc(bad, bad+0x10_0000, 3*sacc.PageSize, 1),
			fault(bad, sacc.FaultNotPresent, sacc.AccessRead)},
		{"three-page destination unmapped", xformDesc(good, bad, 3*sacc.PageSize, 1),
			fault(bad, sacc.FaultNotPresent, sacc.AccessWrite)},
		{"three-page source read-denied", memcpyDesc(good+3*sacc.PageSize, good, 3*sacc.PageSize, 1),
			fault(good+3*sacc.PageSize, sacc.FaultReadDenied, sacc.AccessRead)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, pt := newTranslatedDevice(t, 8, 8)
			pt.mapRange(good, bufBase, 3*sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
			pt.mapRange(good+3*sacc.PageSize, bufBase+0x10000, 3*sacc.PageSize, sacc.PTEWrite)
			expectCompletion(t, d.submitAndRun(tc.desc)[0], 1, sacc.StatusBadAddress, 0)
			d.expectFaults(tc.want)
		})
	}
}

// §10: "after software changes or removes a mapping, the old translation keeps
// working until software invalidates it"; INVALIDATE "otherwise flush the entry for
// IOVA page (value & ~0xFFF)", and only that entry.
func TestIOTLBKeepsStaleTranslationUntilInvalidate(t *testing.T) {
	const src, dst, other = 0x0000_0010_0000_0000, 0x0000_0020_0000_0000, 0x0000_0030_0000_0000
	oldPhys, newPhys, dstPhys := uint64(bufBase), uint64(bufBase+0x1000), uint64(bufBase+0x2000)
	d, pt := newTranslatedDevice(t, 16, 16)
	pt.mapRange(src, oldPhys, sacc.PageSize, sacc.PTERead)
	pt.mapRange(dst, dstPhys, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
	pt.mapRange(other, newPhys, sacc.PageSize, sacc.PTERead)
	oldData, newData := pattern(64, 0x0D), pattern(64, 0x4E)
	d.write(oldPhys, oldData)
	d.write(newPhys, newData)
	copyAndCheck := func(step string, want []byte) {
		t.Helper()
		d.memset(dstPhys, 64, guard)
		expectCompletion(t, d.submitAndRun(memcpyDesc(src, dst, 64, 1))[0], 1, sacc.StatusOK, 64)
		if diff := firstDiff(d.read(dstPhys, 64), want); diff != "" {
			t.Fatalf("%s: copied data is not the expected page's (%s)", step, diff)
		}
	}

	copyAndCheck("first use", oldData)
	pt.setLeaf(src, sacc.MakePTE(newPhys, sacc.PTERead))
	copyAndCheck("mapping changed, not invalidated", oldData)
	d.iommuWrite64(sacc.IOMMURegInvalidate, other) // another page: src stays cached
	copyAndCheck("another page invalidated", oldData)
	d.iommuWrite64(sacc.IOMMURegInvalidate, src|0x123) // low 12 bits ignored
	copyAndCheck("page invalidated", newData)

	pt.setLeaf(src, 0)
	copyAndCheck("mapping removed, not invalidated", newData)
	d.iommuWrite64(sacc.IOMMURegInvalidate, src)
	expectCompletion(t, d.submitAndRun(memcpyDesc(src, dst, 64, 2))[0], 2, sacc.StatusBadAddress, 0)
	d.expectFaults(fault(src, sacc.FaultNotPresent, sacc.AccessRead))
}

// §10: INVALIDATE "all ones: flush the whole IOTLB".
func TestIOTLBInvalidateAllFlushesEverything(t *testing.T) {
	const src, dst = 0x0000_0010_0000_0000, 0x0000_0020_0000_0000
	d, pt := newTranslatedDevice(t, 8, 8)
	pt.mapRange(src, bufBase, sacc.PageSize, sacc.PTERead)
	pt.mapRange(dst, bufBase+0x2000, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
	d.write(bufBase, pattern(64, 1))
	d.write(bufBase+0x1000, pattern(64, 2))
	d.submitAndRun(memcpyDesc(src, dst, 64, 1))

	pt.setLeaf(src, sacc.MakePTE(bufBase+0x1000, sacc.PTERead))
	pt.setLeaf(dst, sacc.MakePTE(bufBase+0x3000, sacc.PTERead|sacc.PTEWrite))
	d.iommuWrite64(sacc.IOMMURegInvalidate, sacc.InvalidateAll)
	expectCompletion(t, d.submitAndRun(memcpyDesc(src, dst, 64, 2))[0], 2, sacc.StatusOK, 64)
	d.expectBytes("new destination page", bufBase+0x3000, pattern(64, 2))
}

// §10: "IOTLB: the IOMMU caches leaf translations (32 entries, least recently used
// out)". A stale entry that keeps being used survives while fewer than 32 other
// pages come and go (it is the least recently *used* that leaves, not the oldest),
// and is evicted once more than 32 other pages have been used since its last use.
func TestIOTLBEvictsLeastRecentlyUsed(t *testing.T) {
	const src, dst, bulk = 0x0000_0010_0000_0000, 0x0000_0020_0000_0000, 0x0000_0060_0000_0000
	const bulkPages = 96
	d, pt := newTranslatedDevice(t, 16, 16)
	pt.mapRange(src, bufBase, sacc.PageSize, sacc.PTERead)
	pt.mapRange(dst, bufBase+0x2000, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
	pt.mapRange(bulk, bufBase+0x10_0000, bulkPages*sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
	oldData, newData := pattern(64, 1), pattern(64, 2)
	d.write(bufBase, oldData)
	d.write(bufBase+0x1000, newData)
	copySrc := func(step string, want []byte) {
		t.Helper()
		expectCompletion(t, d.submitAndRun(memcpyDesc(src, dst, 64, 1))[0], 1, sacc.StatusOK, 64)
		if diff := firstDiff(d.read(bufBase+0x2000, 64), want); diff != "" {
			t.Fatalf("%s: copied data is not the expected page's (%s)", step, diff)
		}
	}
	nextBulk := uint64(0)
	touchPages := func(n uint64) { // n fresh pages, half read and half written, ≤ 64 KiB per command
		t.Helper()
		for done := uint64(0); done < n; done += 16 {
			half := min(8, (n-done)/2)
			a := bulk + nextBulk*sacc.PageSize
			nextBulk += 2 * half
			expectCompletion(t, d.submitAndRun(memcpyDesc(a, a+half*sacc.PageSize, uint32(half*sacc.PageSize), 2))[0],
				2, sacc.StatusOK, uint32(half*sacc.PageSize))
		}
	}

	copySrc("first use", oldData)
	pt.setLeaf(src, sacc.MakePTE(bufBase+0x1000, sacc.PTERead)) // not invalidated
	touchPages(20)
	copySrc("after 20 other pages", oldData)
	touchPages(20) // 41 pages entered since src did, but src was used 20 pages ago
	copySrc("after 20 more other pages, src used in between", oldData)
	touchPages(48)
	copySrc("after 48 other pages", newData)
}

// §10: the IOTLB caches leaf translations, permissions included: a mapping made
// read-only keeps allowing writes until it is invalidated.
func TestIOTLBKeepsStalePermissionsUntilInvalidate(t *testing.T) {
	const src, dst = 0x0000_0010_0000_0000, 0x0000_0020_0000_0000
	d, pt := newTranslatedDevice(t, 8, 8)
	pt.mapRange(src, bufBase, sacc.PageSize, sacc.PTERead)
	pt.mapRange(dst, bufBase+0x1000, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
	d.write(bufBase, pattern(64, 3))
	expectCompletion(t, d.submitAndRun(memcpyDesc(src, dst, 64, 1))[0], 1, sacc.StatusOK, 64)

	pt.setLeaf(dst, sacc.MakePTE(bufBase+0x1000, sacc.PTERead))
	expectCompletion(t, d.submitAndRun(memcpyDesc(src, dst, 64, 2))[0], 2, sacc.StatusOK, 64)
	d.expectFaults()

	d.iommuWrite64(sacc.IOMMURegInvalidate, dst)
	expectCompletion(t, d.submitAndRun(memcpyDesc(src, dst, 64, 3))[0], 3, sacc.StatusBadAddress, 0)
	d.expectFaults(fault(dst, sacc.FaultWriteDenied, sacc.AccessWrite))
}

// §10: the IOTLB caches translations, and a page that faulted had none: once
// software maps it, the next access uses the new mapping without an invalidation.
func TestIOTLBDoesNotCacheFaults(t *testing.T) {
	const src, dst = 0x0000_0010_0000_0000, 0x0000_0020_0000_0000
	d, pt := newTranslatedDevice(t, 8, 8)
	pt.mapRange(dst, bufBase+0x1000, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
	expectCompletion(t, d.submitAndRun(memcpyDesc(src, dst, 64, 1))[0], 1, sacc.StatusBadAddress, 0)
	d.expectFaults(fault(src, sacc.FaultNotPresent, sacc.AccessRead))

	pt.mapRange(src, bufBase, sacc.PageSize, sacc.PTERead)
	d.write(bufBase, pattern(64, 4))
	expectCompletion(t, d.submitAndRun(memcpyDesc(src, dst, 64, 2))[0], 2, sacc.StatusOK, 64)
	d.expectBytes("destination", bufBase+0x1000, pattern(64, 4))
}

// §10: "The log is full when (FAULT_TAIL + 1) mod FAULT_SIZE == FAULT_HEAD ... a
// full log sets the overflow bit and drops the record"; the overflow bit is
// "cleared by the next write to FAULT_HEAD"; FAULT_MSI_ADDR: "each logged fault
// also writes FAULT_MSI_DATA here" — a dropped one is not logged.
func TestIOMMUFaultLogOverflow(t *testing.T) {
	d, pt := newTranslatedDevice(t, 16, 16)
	d.iommuWrite32(sacc.IOMMURegFaultSize, 4)
	d.iommuWrite64(sacc.IOMMURegFaultMSIAddr, mailboxAddr(2))
	d.iommuWrite32(sacc.IOMMURegFaultMSIData, faultMSIData)
	const ok = 0x0000_0010_0000_0000
	pt.mapRange(ok, bufBase, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
	bad := func(i int) uint64 { return 0x0000_0070_0000_0000 + uint64(i)*sacc.PageSize }
	failing := func(i int) sacc.Descriptor { return memcpyDesc(bad(i), ok, 64, uint32(i)) }
	status := func() uint32 { t.Helper(); return d.iommuRead32(sacc.IOMMURegSTATUS) }

	for _, cpl := range d.submitAndRun(failing(0), failing(1), failing(2)) {
		expectCompletion(t, cpl, cpl.ReqID, sacc.StatusBadAddress, 0)
	}
	d.expectFaults(fault(bad(0), 1, 0), fault(bad(1), 1, 0), fault(bad(2), 1, 0))
	if st := status(); st != sacc.IOMMUStatusActive|sacc.IOMMUStatusFaultsLog {
		t.Fatalf("IOMMU STATUS = 0x%x with a full log, want 0x3 (no overflow yet)", st)
	}
	if v := d.mailboxValue(2, true); v != faultMSIData {
		t.Fatalf("fault MSI mailbox = 0x%x after logged faults, want 0x%x", v, faultMSIData)
	}

	// The log is full: the fourth fault is dropped and flagged.
	expectCompletion(t, d.submitAndRun(failing(3))[0], 3, sacc.StatusBadAddress, 0)
	if tail := d.iommuRead32(sacc.IOMMURegFaultTail); tail != 3 {
		t.Fatalf("FAULT_TAIL = %d after a fault into a full log, want 3", tail)
	}
	if rec := d.faultRecord(3); rec != (sacc.FaultRecord{}) {
		t.Fatalf("log slot 3 = %+v: a record was written into a full log", rec)
	}
	if st := status(); st != sacc.IOMMUStatusActive|sacc.IOMMUStatusFaultsLog|sacc.IOMMUStatusOverflowed {
		t.Fatalf("IOMMU STATUS = 0x%x after a dropped record, want 0x7", st)
	}
	if v := d.mailboxValue(2, false); v != 0 {
		t.Fatalf("fault MSI sent (0x%x) for a dropped record", v)
	}

	// Software reads one record: overflow clears, the next fault is logged in slot 3.
	d.iommuWrite32(sacc.IOMMURegFaultHead, 1)
	if st := status(); st != sacc.IOMMUStatusActive|sacc.IOMMUStatusFaultsLog {
		t.Fatalf("IOMMU STATUS = 0x%x after writing FAULT_HEAD, want 0x3 (overflow cleared)", st)
	}
	expectCompletion(t, d.submitAndRun(failing(4))[0], 4, sacc.StatusBadAddress, 0)
	if rec := d.faultRecord(3); rec != fault(bad(4), sacc.FaultNotPresent, sacc.AccessRead) {
		t.Fatalf("log slot 3 = %+v, want the fifth fault", rec)
	}
	if tail := d.iommuRead32(sacc.IOMMURegFaultTail); tail != 0 {
		t.Fatalf("FAULT_TAIL = %d, want 0 (wrapped)", tail)
	}
	if v := d.mailboxValue(2, false); v != faultMSIData {
		t.Fatalf("fault MSI mailbox = 0x%x after a logged fault, want 0x%x", v, faultMSIData)
	}
}

// §10: "FAULT_MSI_ADDR: if non-zero, each logged fault also writes FAULT_MSI_DATA
// here" — and with it zero, nothing is written (in particular not at address 0).
func TestIOMMUFaultMSI(t *testing.T) {
	d, pt := newTranslatedDevice(t, 8, 8)
	const ok, bad = 0x0000_0010_0000_0000, 0x0000_0070_0000_0000
	pt.mapRange(ok, bufBase, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
	d.iommuWrite32(sacc.IOMMURegFaultMSIData, faultMSIData)

	d.submitAndRun(memcpyDesc(bad, ok, 64, 1))
	d.expectFaults(fault(bad, sacc.FaultNotPresent, sacc.AccessRead))
	if v := d.readl(0); v != 0 {
		t.Fatalf("RAM at 0 = 0x%x after a fault with FAULT_MSI_ADDR = 0", v)
	}

	d.iommuWrite64(sacc.IOMMURegFaultMSIAddr, mailboxAddr(2))
	d.submitAndRun(memcpyDesc(ok, bad, 64, 2))
	d.expectFaults(fault(bad, sacc.FaultNotPresent, sacc.AccessRead), fault(bad, sacc.FaultNotPresent, sacc.AccessWrite))
	if v := d.mailboxValue(2, false); v != faultMSIData {
		t.Fatalf("fault MSI mailbox = 0x%x, want 0x%x", v, faultMSIData)
	}
}

// §7.6: "a DMA fault while fetching a descriptor ... (code 2)" is a device error;
// §10: "device error 2 for descriptor fetch".
func TestDescriptorFetchFaultIsDeviceError2(t *testing.T) {
	d := newDevice(t)
	pt := newIOPageTables(d.client)
	pt.identity(cqRing, sacc.PageSize, sacc.PTERead|sacc.PTEWrite) // the SQ is not mapped
	pt.enableIOMMU(16)
	d.programRings(sqRing, 8, cqRing, 8)
	d.enable()
	d.submit(nop(1))
	d.step(runNS)
	d.expectHalted(sacc.StatusBadAddress)
	d.expectFaults(fault(sqRing, sacc.FaultNotPresent, sacc.AccessRead))
	d.expectCQUntouched()
}

// §7.6: "a DMA fault while ... posting a completion (code 2)" is a device error.
func TestCompletionPostFaultIsDeviceError2(t *testing.T) {
	d := newDevice(t)
	pt := newIOPageTables(d.client)
	pt.identity(sqRing, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
	pt.identity(cqRing, sacc.PageSize, sacc.PTERead) // the CQ is read-only
	pt.enableIOMMU(16)
	d.programRings(sqRing, 8, cqRing, 8)
	d.enable()
	d.submit(nop(1))
	d.step(runNS)
	d.expectHalted(sacc.StatusBadAddress)
	d.expectFaults(fault(cqRing, sacc.FaultWriteDenied, sacc.AccessWrite))
	d.expectCQUntouched()
}

// §10: the IOMMU "translates every DMA the device issues, except writes into the
// interrupt window": an MSI-X message aimed at RAM goes through the page tables.
func TestIOMMUTranslatesMSIXWriteToRAM(t *testing.T) {
	const msiIOVA = 0x0000_0066_0000_0000
	d, pt := newTranslatedDevice(t, 8, 8)
	pt.mapRange(msiIOVA, mailbox, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
	d.setMSIXEntry(sacc.MSIXVectorComplete, msiIOVA+0x300, msiData0, false)
	d.setMSIXControl(true, false)
	d.submitAndRun(withIRQ(nop(1)))
	if v := d.mailboxValue(3, false); v != msiData0 {
		t.Fatalf("RAM behind the MSI IOVA = 0x%x, want 0x%x", v, msiData0)
	}
	d.expectFaults()
}

// §10: writes into the interrupt window are not translated: an MSI-X message there
// needs no mapping and logs no fault.
func TestIOMMUDoesNotTranslateInterruptWindow(t *testing.T) {
	d, _ := newTranslatedDevice(t, 8, 8)
	d.setMSIXEntry(sacc.MSIXVectorComplete, sacc.IntWindowBase, 0x31, false)
	d.setMSIXControl(true, false)
	expectCompletion(t, d.submitAndRun(withIRQ(nop(1)))[0], 1, sacc.StatusOK, 0)
	d.expectFaults()
	d.expectRunning()
}

// §6.3: NOP "addresses and length ignored" — under the IOMMU, no translation, no
// fault.
func TestNOPIgnoresAddressesUnderIOMMU(t *testing.T) {
	d, _ := newTranslatedDevice(t, 8, 8)
	desc := sacc.Descriptor{Src: 0x0000_7000_0000_0000, Dst: 1 << 60, Length: 4096, Opcode: sacc.OpNOP, ReqID: 5}
	expectCompletion(t, d.submitAndRun(desc)[0], 5, sacc.StatusOK, 0)
	d.expectFaults()
}
