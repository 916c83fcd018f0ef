package remapiova

import (
	"bytes"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/iorig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 1_000_000 // 1 ms: a remap takes a few µs at most

const (
	srcIOVA = 0x4000_0000
	dstIOVA = 0x4000_1000
	n       = 64
)

// rig has a source mapped for reading and a destination mapped for writing,
// which the device has already written once: the IOTLB holds its translation.
type rig struct {
	*iorig.Rig
	src, old uint64
}

func setUp(t *testing.T, arch cpu.Arch) *rig {
	r := &rig{Rig: iorig.Up(t, host.Config{CPU: cpu.Config{Arch: arch}}, 8)}
	r.src = r.Buffer(t, bytes.Repeat([]byte{0x11}, n))
	r.old = r.Page()
	if err := r.Map(srcIOVA, r.src, sacc.PTERead); err != nil {
		t.Fatal(err)
	}
	if err := r.Map(dstIOVA, r.old, sacc.PTEWrite); err != nil {
		t.Fatal(err)
	}
	if c, ok := r.Copy(srcIOVA, dstIOVA, n); !ok || c.Status != sacc.StatusOK {
		t.Fatalf("check: the first copy failed: %+v", c)
	}
	if _, ok := r.Cached(dstIOVA); !ok {
		t.Fatal("check: the IOTLB does not hold the destination")
	}
	return r
}

func (r *rig) remap(iova, phys, perm uint64) ([]trace.Event, error) {
	var err error
	mark := r.Mark()
	r.Do("Remap", budget, func() { err = Remap(r.CPU, r.Root, iova, phys, perm) })
	return r.Since(mark), err
}

// TestTheNextWriteLandsInTheNewPage remaps the destination and copies again.
func TestTheNextWriteLandsInTheNewPage(t *testing.T) {
	for _, arch := range []cpu.Arch{cpu.X86, cpu.ARM64} {
		t.Run(arch.String(), func(t *testing.T) {
			r := setUp(t, arch)
			fresh := r.Page()
			evs, err := r.remap(dstIOVA, fresh, sacc.PTEWrite)
			if err != nil {
				r.Fatalf("Remap(iova %#x, new page %#x) returned an error: %v", uint64(dstIOVA), fresh, err)
			}
			if phys, _, ok := r.Walk(dstIOVA); !ok || phys != fresh {
				r.Fatalf("After Remap, the page tables in RAM send IOVA %#x to %#x (mapped: %v); want the new page %#x.",
					uint64(dstIOVA), phys, ok, fresh)
			}
			r.checkInvalidatedAfterTheStore(evs, dstIOVA)
			r.M.RAM().Fill(r.src, n, 0x22)
			c, ok := r.Copy(srcIOVA, dstIOVA, n)
			if !ok || c.Status != sacc.StatusOK {
				r.Fatalf("After Remap the device's copy to IOVA %#x failed: %+v (arrived %v).", uint64(dstIOVA), c, ok)
			}
			newB, oldB := r.M.RAM().Load(fresh, 1), r.M.RAM().Load(r.old, 1)
			if newB == 0x22 && oldB == 0x11 {
				return
			}
			inv := check.Find(evs, trace.IOMMUInvalidate)
			switch {
			case oldB == 0x22 && len(inv) == 0:
				r.Fatalf("After Remap the device wrote the OLD page %#x again, and the new page %#x got nothing.\n"+
					"The page tables were right, but the IOMMU never looked at them: its IOTLB still held the translation it "+
					"cached for IOVA %#x during the first copy, and Remap never wrote INVALIDATE. (§10: the IOTLB does not watch "+
					"the page tables.)", r.old, fresh, uint64(dstIOVA))
			case oldB == 0x22:
				r.Fatalf("After Remap the device wrote the OLD page %#x again. Remap did write INVALIDATE, but not for the page "+
					"of IOVA %#x:\n%s", r.old, uint64(dstIOVA), check.Lines(inv))
			default:
				r.Fatalf("After Remap the new page holds %#x and the old one %#x; want 0x22 in the new page and the old one untouched (0x11).",
					newB, oldB)
			}
		})
	}
}

// TestOnlyThatPageChanges: the other mapping keeps working.
func TestOnlyThatPageChanges(t *testing.T) {
	r := setUp(t, cpu.X86)
	fresh := r.Page()
	if _, err := r.remap(dstIOVA, fresh, sacc.PTEWrite); err != nil {
		r.Fatalf("Remap returned an error: %v", err)
	}
	if phys, perm, ok := r.Walk(srcIOVA); !ok || phys != r.src || perm != sacc.PTERead {
		r.Fatalf("Remap of %#x changed the mapping of its neighbour %#x: it now goes to %#x with rights %s (mapped: %v).",
			uint64(dstIOVA), uint64(srcIOVA), phys, iorig.PermName(perm), ok)
	}
	if _, perm, _ := r.Walk(dstIOVA); perm != sacc.PTEWrite {
		r.Fatalf("Remap was asked for write-only rights on %#x; the tables give %s.", uint64(dstIOVA), iorig.PermName(perm))
	}
	// A read-only remap: the device may no longer write there.
	ro := r.Page()
	if _, err := r.remap(dstIOVA, ro, sacc.PTERead); err != nil {
		r.Fatalf("Remap returned an error: %v", err)
	}
	c, ok := r.Copy(srcIOVA, dstIOVA, n)
	faults := r.Faults()
	if !ok || c.Status != sacc.StatusBadAddress || len(faults) != 1 || faults[0].Reason != sacc.FaultWriteDenied {
		r.Fatalf("IOVA %#x was remapped read-only, so a write by the device must fault (reason 2). "+
			"The copy ended with %+v and %d faults: the IOMMU still used the old, writable translation?", uint64(dstIOVA), c, len(faults))
	}
}

// TestNotMapped: an IOVA nobody mapped is an error, and nothing is written.
func TestNotMapped(t *testing.T) {
	r := setUp(t, cpu.X86)
	for _, iova := range []uint64{0x4000_5000, 0x7_0000_0000} {
		evs, err := r.remap(iova, r.Page(), sacc.PTEWrite)
		if err == nil {
			r.Fatalf("IOVA %#x is not mapped, yet Remap returned nil. Walk the levels from root and return an error at the first "+
				"absent entry.", iova)
		}
		if w := check.Find(evs, trace.CPUWrite, trace.IOMMURegWrite); len(w) > 0 {
			r.Fatalf("IOVA %#x is not mapped and Remap returned an error, but first it wrote:\n%s", iova, check.Lines(w))
		}
	}
}

// checkInvalidatedAfterTheStore: an invalidation of iova's page must follow the
// moment the new leaf entry reached RAM. Before it, the old entry is still in
// the tables, and a DMA between the invalidation and the store would cache it
// again.
func (r *rig) checkInvalidatedAfterTheStore(evs []trace.Event, iova uint64) {
	steps := r.M.IOMMU().Walk(iova)
	leaf := steps[len(steps)-1]
	slot := leaf.Table + leaf.Index*sacc.IOPTEntrySize
	landed := -1
	for i, ev := range evs {
		if ev.Kind == trace.CPUWrite && ev.Args[0] == slot && ev.Args[2] == uint64(leaf.Entry) {
			landed = i
		}
	}
	page := iova &^ sacc.PageMask
	var inv []trace.Event
	for i, ev := range evs {
		if ev.Kind == trace.IOMMUInvalidate && (ev.Args[0] == page || ev.Args[0] == sacc.InvalidateAll) {
			if i > landed {
				return
			}
			inv = append(inv, ev)
		}
	}
	if len(inv) == 0 || landed < 0 {
		return // no invalidation of the page at all: the copy's outcome says what went wrong
	}
	r.Fatalf("Remap invalidated the IOTLB before its new leaf entry had reached RAM:\n%s  %s (the new entry lands)\n"+
		"Between the two, the old entry is still in the tables, and a DMA in that gap caches the old translation again, "+
		"which nothing will drop. Store the entry, make sure it is in RAM, then invalidate.", check.Lines(inv), evs[landed].String())
}
