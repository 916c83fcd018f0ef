package iommu

import (
	"encoding/binary"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// fakeMem is a few MiB of RAM starting at physical address 0.
type fakeMem struct{ b []byte }

func (m *fakeMem) in(addr uint64, n int) bool {
	return addr <= uint64(len(m.b)) && uint64(n) <= uint64(len(m.b))-addr
}

func (m *fakeMem) ReadPhys(addr uint64, b []byte) bool {
	if !m.in(addr, len(b)) {
		return false
	}
	copy(b, m.b[addr:])
	return true
}

func (m *fakeMem) WritePhys(addr uint64, b []byte) bool {
	if !m.in(addr, len(b)) {
		return false
	}
	copy(m.b[addr:], b)
	return true
}

type posted struct {
	addr uint64
	data uint32
}

type fakePoster struct{ posts []posted }

func (p *fakePoster) PostWrite32(addr uint64, data uint32) {
	p.posts = append(p.posts, posted{addr, data})
}

// Layout of the fake RAM.
const (
	memSize    = 4 << 20
	rootTable  = 0x1000     // PT_ROOT
	tableArena = 0x10_0000  // further tables are allocated from here
	dataPages  = 0x20_0000  // pages the mappings point at
	faultLog   = 0x3F_0000  // FAULT_BASE in the fault-log tests
	beyondRAM  = 0x800_0000 // a physical address that is not RAM
	rw         = sacc.PTERead | sacc.PTEWrite
	srcID      = 0x0018 // 00:03.0
)

type fixture struct {
	t    testing.TB
	mem  *fakeMem
	post *fakePoster
	buf  *trace.Buffer
	u    *IOMMU
	next uint64 // next free table in the arena
}

// newFixture returns an IOMMU at power-on over fake RAM, tracing into a buffer.
func newFixture(t testing.TB, q quirk.Set) *fixture {
	f := &fixture{t: t, mem: &fakeMem{b: make([]byte, memSize)}, post: &fakePoster{},
		buf: &trace.Buffer{}, next: tableArena}
	tr := trace.NewTracer(sim.New(1))
	tr.Attach(f.buf)
	f.u = New(f.mem, f.post, tr, q)
	return f
}

// enabled returns a fixture with PT_ROOT programmed, translation on and the trace empty.
func enabled(t testing.TB, q quirk.Set) *fixture {
	f := newFixture(t, q)
	f.write(sacc.IOMMURegPTRoot, 8, rootTable)
	f.write(sacc.IOMMURegCTRL, 4, sacc.IOMMUCtrlTranslate)
	f.buf.Reset()
	return f
}

func (f *fixture) write(off uint64, size int, val uint64) {
	f.t.Helper()
	if !f.u.WriteReg(off, size, val) {
		f.t.Fatalf("WriteReg(%#x, %d, %#x) refused", off, size, val)
	}
}

func (f *fixture) read(off uint64, size int) uint64 {
	f.t.Helper()
	v, ok := f.u.ReadReg(off, size)
	if !ok {
		f.t.Fatalf("ReadReg(%#x, %d) refused", off, size)
	}
	return v
}

func (f *fixture) rd64(addr uint64) uint64 { return binary.LittleEndian.Uint64(f.mem.b[addr:]) }
func (f *fixture) wr64(addr, v uint64)     { binary.LittleEndian.PutUint64(f.mem.b[addr:], v) }

// entryAddr is the address of iova's entry at level, allocating missing tables on the way
// (with RW intermediate entries).
func (f *fixture) entryAddr(iova uint64, level int) uint64 {
	table := uint64(rootTable)
	for l := 0; ; l++ {
		a := table + sacc.IOVAIndex(iova, l)*sacc.IOPTEntrySize
		if l == level {
			return a
		}
		e := sacc.PTE(f.rd64(a))
		if e.Addr() == 0 {
			f.next += sacc.PageSize
			e = sacc.MakePTE(f.next, rw)
			f.wr64(a, uint64(e))
		}
		table = e.Addr()
	}
}

// mapPage maps the IOVA page of iova to phys with leaf permission perm.
func (f *fixture) mapPage(iova, phys, perm uint64) {
	f.wr64(f.entryAddr(iova, sacc.IOPTLevels-1), uint64(sacc.MakePTE(phys, perm)))
}

// setPerms gives iova's entry at every level the permission of perms[level], keeping
// the addresses.
func (f *fixture) setPerms(iova uint64, perms [sacc.IOPTLevels]uint64) {
	for l := 0; l < sacc.IOPTLevels; l++ {
		a := f.entryAddr(iova, l)
		f.wr64(a, uint64(sacc.MakePTE(sacc.PTE(f.rd64(a)).Addr(), perms[l])))
	}
}

// kinds lists the events' kinds, less the walk's levels (iommu_walk), which
// walkEvents checks against Walk.
func (f *fixture) kinds() []trace.Kind {
	var ks []trace.Kind
	for _, e := range f.buf.Events {
		if e.Kind != trace.IOMMUWalk {
			ks = append(ks, e.Kind)
		}
	}
	return ks
}

// walkEvents checks that the iommu_walk events recorded are the levels the
// inspection walk (Walk) reads for iova, level by level: the table, the index,
// the entry, stopping where Walk stops.
func (f *fixture) walkEvents(iova uint64) {
	f.t.Helper()
	evs := f.events(trace.IOMMUWalk)
	steps := f.u.Walk(iova)
	if len(evs) != len(steps) {
		f.t.Fatalf("%d iommu_walk events, Walk has %d steps", len(evs), len(steps))
	}
	for i, s := range steps {
		want := [trace.MaxArgs]uint64{uint64(s.Level), s.Table, s.Index, uint64(s.Entry)}
		if evs[i].Args != want {
			f.t.Errorf("iommu_walk %d = %#x, want %#x (Walk: %+v)", i, evs[i].Args, want, s)
		}
	}
}

func (f *fixture) events(k trace.Kind) []trace.Event {
	var out []trace.Event
	for _, e := range f.buf.Events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// translate calls Translate and checks its result.
func (f *fixture) translate(iova uint64, access uint8, wantPhys uint64, wantMissed bool, wantFault sacc.FaultReason) {
	f.t.Helper()
	phys, missed, fault := f.u.Translate(iova, access, srcID)
	if phys != wantPhys || missed != wantMissed || fault != wantFault {
		f.t.Fatalf("Translate(%#x, %d) = (%#x, %v, %v), want (%#x, %v, %v)",
			iova, access, phys, missed, fault, wantPhys, wantMissed, wantFault)
	}
}

func sameKinds(a, b []trace.Kind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
