package iommu

import (
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/trace"
)

const msiData = 0x41

// withLog returns an enabled fixture with a fault log of size records and the fault MSI
// pointed at the interrupt window.
func withLog(t *testing.T, size uint32) *fixture {
	f := enabled(t, 0)
	f.write(sacc.IOMMURegFaultBase, 8, faultLog)
	f.write(sacc.IOMMURegFaultSize, 4, uint64(size))
	f.write(sacc.IOMMURegFaultMSIAddr, 8, sacc.IntWindowBase)
	f.write(sacc.IOMMURegFaultMSIData, 4, msiData)
	f.buf.Reset()
	return f
}

// faultAt makes one not-present read fault at a distinct IOVA.
func (f *fixture) faultAt(i int) uint64 {
	iova := uint64(0x100_0000) + uint64(i)*sacc.PageSize + 0x10
	f.u.Translate(iova, uint8(i%2), srcID)
	return iova
}

func (f *fixture) record(slot uint64) sacc.FaultRecord {
	return sacc.DecodeFaultRecord(f.mem.b[faultLog+slot*sacc.FaultRecordSize:])
}

func (f *fixture) status() uint64 { return f.read(sacc.IOMMURegSTATUS, 4) }

func TestFaultLogRing(t *testing.T) {
	const (
		active   = sacc.IOMMUStatusActive
		notEmpty = sacc.IOMMUStatusFaultsLog
		overflow = sacc.IOMMUStatusOverflowed
	)
	f := withLog(t, 4)
	if got := f.status(); got != active {
		t.Fatalf("STATUS = %#x before any fault", got)
	}
	type step struct {
		name      string
		do        func() uint64 // returns the faulting IOVA, or 0 for a register write
		slot      int           // where the record must land; -1: dropped
		tail      uint64
		status    uint64
		posts     int // fault MSIs so far
		overflows int // IOMMUFaultDropped so far
	}
	fault := func(i int) func() uint64 { return func() uint64 { return f.faultAt(i) } }
	head := func(v uint64) func() uint64 {
		return func() uint64 { f.write(sacc.IOMMURegFaultHead, 4, v); return 0 }
	}
	steps := []step{
		{"first fault", fault(0), 0, 1, active | notEmpty, 1, 0},
		{"second fault", fault(1), 1, 2, active | notEmpty, 2, 0},
		{"third fault", fault(2), 2, 3, active | notEmpty, 3, 0},
		{"log full: (3+1)%4 == head 0", fault(3), -1, 3, active | notEmpty | overflow, 3, 1},
		{"still full", fault(4), -1, 3, active | notEmpty | overflow, 3, 2},
		{"head write clears overflow", head(2), -1, 3, active | notEmpty, 3, 2},
		{"fault fills slot 3, tail wraps", fault(5), 3, 0, active | notEmpty, 4, 2},
		{"fault fills slot 0", fault(6), 0, 1, active | notEmpty, 5, 2},
		{"full again: (1+1)%4 == head 2", fault(7), -1, 1, active | notEmpty | overflow, 5, 3},
		{"head == tail: empty", head(1), -1, 1, active, 5, 3},
		{"head compared modulo size", head(5), -1, 1, active, 5, 3},
	}
	for _, s := range steps {
		before := f.record(3)
		iova := s.do()
		if s.slot >= 0 {
			want := sacc.FaultRecord{IOVA: iova, SourceID: srcID, Reason: sacc.FaultNotPresent, Access: uint8(iova>>sacc.PageShift) % 2}
			if got := f.record(uint64(s.slot)); got != want {
				t.Errorf("%s: slot %d = %+v, want %+v", s.name, s.slot, got, want)
			}
		} else if iova != 0 && f.record(3) != before {
			t.Errorf("%s: a dropped record was written", s.name)
		}
		if got := f.read(sacc.IOMMURegFaultTail, 4); got != s.tail {
			t.Errorf("%s: FAULT_TAIL = %d, want %d", s.name, got, s.tail)
		}
		if got := f.status(); got != s.status {
			t.Errorf("%s: STATUS = %#x, want %#x", s.name, got, s.status)
		}
		if got := len(f.post.posts); got != s.posts {
			t.Errorf("%s: %d fault MSIs, want %d", s.name, got, s.posts)
		}
		if got := len(f.events(trace.IOMMUFaultDropped)); got != s.overflows {
			t.Errorf("%s: %d iommu_fault_overflow, want %d", s.name, got, s.overflows)
		}
	}
	for _, p := range f.post.posts {
		if p != (posted{sacc.IntWindowBase, msiData}) {
			t.Errorf("fault MSI %+v", p)
		}
	}
	ev := f.events(trace.IOMMUFaultDropped)
	if [2]uint64(ev[0].Args[:2]) != [2]uint64{0x100_0000 + 3*sacc.PageSize + 0x10, uint64(sacc.FaultNotPresent)} {
		t.Errorf("iommu_fault_overflow args %#x", ev[0].Args)
	}
	if got, want := len(f.events(trace.IOMMUFault)), 8; got != want {
		t.Errorf("%d iommu_fault events, want %d (dropped faults are traced too)", got, want)
	}
}

func TestFaultMSIOnlyForLoggedFaults(t *testing.T) {
	cases := []struct {
		name    string
		msiAddr uint64
		size    uint32
		faults  int
		posts   []posted
	}{
		{"logged, MSI to the interrupt window", sacc.IntWindowBase + 0x4, 8, 2,
			[]posted{{sacc.IntWindowBase + 0x4, msiData}, {sacc.IntWindowBase + 0x4, msiData}}},
		{"logged, MSI to RAM", 0x2000, 8, 1, []posted{{0x2000, msiData}}},
		{"logged, FAULT_MSI_ADDR zero: no MSI", 0, 8, 2, nil},
		{"full log: only the logged fault posts", sacc.IntWindowBase, 2, 3, []posted{{sacc.IntWindowBase, msiData}}},
		{"size 1 is always full", sacc.IntWindowBase, 1, 2, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := withLog(t, c.size)
			f.write(sacc.IOMMURegFaultMSIAddr, 8, c.msiAddr)
			for i := 0; i < c.faults; i++ {
				f.faultAt(i)
			}
			if len(f.post.posts) != len(c.posts) {
				t.Fatalf("posts %+v, want %+v", f.post.posts, c.posts)
			}
			for i := range c.posts {
				if f.post.posts[i] != c.posts[i] {
					t.Errorf("post %d = %+v, want %+v", i, f.post.posts[i], c.posts[i])
				}
			}
		})
	}
}

func TestFaultLogUnusableSizeDropsEverything(t *testing.T) {
	for _, size := range []uint32{0, 3, 6, 0x8000_0001} {
		f := withLog(t, size)
		f.faultAt(0)
		if got := f.kinds(); !sameKinds(got, []trace.Kind{trace.IOTLBMiss, trace.IOMMUFault, trace.IOMMUFaultDropped}) {
			t.Errorf("size %d: events %v", size, got)
		}
		if got := f.status(); got != sacc.IOMMUStatusActive|sacc.IOMMUStatusOverflowed {
			t.Errorf("size %d: STATUS = %#x, want active and overflowed, log empty", size, got)
		}
		if f.read(sacc.IOMMURegFaultTail, 4) != 0 || len(f.post.posts) != 0 || f.record(0) != (sacc.FaultRecord{}) {
			t.Errorf("size %d: a fault was logged", size)
		}
	}
}

func TestFaultBaseOrSizeWriteResetsTail(t *testing.T) {
	cases := []struct {
		name string
		off  uint64
		size int
		val  uint64
	}{
		{"FAULT_SIZE", sacc.IOMMURegFaultSize, 4, 8},
		{"FAULT_BASE 64-bit", sacc.IOMMURegFaultBase, 8, faultLog},
		{"FAULT_BASE low half", sacc.IOMMURegFaultBase, 4, faultLog},
		{"FAULT_BASE high half", sacc.IOMMURegFaultBase + 4, 4, 0},
	}
	for _, c := range cases {
		f := withLog(t, 8)
		f.faultAt(0)
		f.faultAt(1)
		if f.read(sacc.IOMMURegFaultTail, 4) != 2 {
			t.Fatalf("%s: setup tail", c.name)
		}
		f.write(c.off, c.size, c.val)
		if got := f.read(sacc.IOMMURegFaultTail, 4); got != 0 {
			t.Errorf("%s: FAULT_TAIL = %d after the write, want 0", c.name, got)
		}
		if got := f.read(sacc.IOMMURegFaultHead, 4); got != 0 {
			t.Errorf("%s: FAULT_HEAD = %d, want it untouched", c.name, got)
		}
	}
}

func TestFaultLogNotRAMStillAdvances(t *testing.T) {
	f := withLog(t, 4)
	f.write(sacc.IOMMURegFaultBase, 8, beyondRAM)
	f.faultAt(0)
	if got := f.read(sacc.IOMMURegFaultTail, 4); got != 1 || len(f.post.posts) != 1 {
		t.Errorf("FAULT_TAIL %d, %d MSIs: a record posted to non-RAM is lost, not refused", got, len(f.post.posts))
	}
}
