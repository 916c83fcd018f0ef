package iommu

import (
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// missPages is more pages than the IOTLB holds: cycling through them in order makes
// every translation miss under LRU replacement.
const missPages = 2 * sacc.IOTLBEntries

// benchFixture maps missPages pages and traces into a fixed-size Ring, a sink that
// allocates nothing, so that the measurements are the IOMMU's own.
func benchFixture(tb testing.TB) *fixture {
	f := enabled(tb, 0)
	tr := trace.NewTracer(sim.New(1))
	tr.Attach(trace.NewRing(64))
	f.u.tr = tr
	for i := 0; i < missPages; i++ {
		f.mapPage(uint64(i)*sacc.PageSize, dataPages+uint64(i)*sacc.PageSize, rw)
	}
	return f
}

func TestTranslateAllocatesNothing(t *testing.T) {
	f := benchFixture(t)
	if _, _, r := f.u.Translate(0x10, sacc.AccessRead, srcID); r != 0 {
		t.Fatal(r)
	}
	hit := testing.AllocsPerRun(1000, func() {
		if _, missed, r := f.u.Translate(0x10, sacc.AccessWrite, srcID); missed || r != 0 {
			t.Fatal("not a hit")
		}
	})
	f.write(sacc.IOMMURegInvalidate, 8, sacc.InvalidateAll)
	i := 0
	miss := testing.AllocsPerRun(1000, func() {
		iova := uint64(i%missPages) * sacc.PageSize
		i++
		if _, missed, r := f.u.Translate(iova, sacc.AccessRead, srcID); !missed || r != 0 {
			t.Fatal("not a miss")
		}
	})
	if hit != 0 || miss != 0 {
		t.Errorf("allocations per Translate: hit %v, miss %v; want 0", hit, miss)
	}
}

func BenchmarkTranslateHit(b *testing.B) {
	f := benchFixture(b)
	f.u.Translate(0x10, sacc.AccessRead, srcID)
	b.ReportAllocs()
	for b.Loop() {
		f.u.Translate(0x10, sacc.AccessRead, srcID)
	}
}

func BenchmarkTranslateMiss(b *testing.B) {
	f := benchFixture(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		f.u.Translate(uint64(i%missPages)*sacc.PageSize, sacc.AccessRead, srcID)
		i++
	}
}
