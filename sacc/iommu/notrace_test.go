package iommu

import (
	"testing"

	"github.com/saccbook/saccbook/sacc"
)

// New accepts a nil tracer: every path that traces — register accesses, a walk,
// an IOTLB hit, an invalidation, a fault whose record is dropped —
// still works and records nothing.
func TestAnIOMMUWithoutATracerTranslatesAndFaults(t *testing.T) {
	f := newFixture(t, 0)
	f.u = New(f.mem, f.post, nil, 0)
	f.write(sacc.IOMMURegPTRoot, 8, rootTable)
	f.write(sacc.IOMMURegCTRL, 4, sacc.IOMMUCtrlTranslate)
	if got := f.read(sacc.IOMMURegPTRoot, 8); got != rootTable {
		t.Errorf("PT_ROOT reads %#x, want %#x", got, uint64(rootTable))
	}
	f.mapPage(0x5000, dataPages, rw)
	f.translate(0x5010, sacc.AccessRead, dataPages+0x10, true, 0)
	f.translate(0x5020, sacc.AccessWrite, dataPages+0x20, false, 0)
	f.write(sacc.IOMMURegInvalidate, 8, ^uint64(0))
	f.translate(0x9000, sacc.AccessRead, 0, true, sacc.FaultNotPresent) // no fault log: dropped
	if f.read(sacc.IOMMURegSTATUS, 4)&sacc.IOMMUStatusOverflowed == 0 {
		t.Errorf("STATUS %#x: the dropped fault record did not set the overflow bit", f.read(sacc.IOMMURegSTATUS, 4))
	}
	if len(f.buf.Events) != 0 {
		t.Errorf("%d events reached the fixture's buffer through an IOMMU built without a tracer", len(f.buf.Events))
	}
}
