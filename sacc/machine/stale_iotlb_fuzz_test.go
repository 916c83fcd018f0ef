package machine_test

import (
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/baremetal"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// The data pages the stale-IOTLB fuzzer maps, unmaps and remaps: IOVA pages and
// physical pages both come from these, one page of guard on each side.
const (
	staleData  = baremetal.DataAddr
	stalePages = 32
	guardByte  = 0xA5
)

// mapping is one leaf translation: the physical page and the permissions.
type mapping struct{ phys, perm uint64 }

// pagePair is an IOVA page and the physical page it reached.
type pagePair struct{ iova, phys uint64 }

// iotlbModel is what the device may touch under §10: a page mapped now, or one
// mapped earlier whose translation the IOTLB may still hold because it has not
// been invalidated since. A command translates its pages when it runs and may
// use them until it completes (§6.3), so what it may touch is everything that
// was allowed at some instant since its descriptor was fetched: window.
type iotlbModel struct {
	current map[uint64]mapping   // by IOVA page: the page tables now
	stale   map[uint64][]mapping // by IOVA page: replaced translations not yet invalidated
	window  map[pagePair]uint64  // allowed permissions since the current command's fetch
	written map[uint64]bool      // physical pages ever mapped writable
	// staleUses counts the pages of DMA events that only the window allowed:
	// the tables no longer (or not yet) said so. It shows the window is exercised.
	staleUses int
}

func newIOTLBModel() *iotlbModel {
	return &iotlbModel{current: map[uint64]mapping{}, stale: map[uint64][]mapping{},
		window: map[pagePair]uint64{}, written: map[uint64]bool{}}
}

func (mo *iotlbModel) allow(iova uint64, mp mapping) {
	mo.window[pagePair{iova, mp.phys}] |= mp.perm
	if mp.perm&sacc.PTEWrite != 0 {
		mo.written[mp.phys] = true
	}
}

// set records that the tables now map iova to mp (perm 0: unmapped); the old
// translation stays usable until invalidated.
func (mo *iotlbModel) set(iova uint64, mp mapping) {
	if old, ok := mo.current[iova]; ok && old != mp {
		mo.stale[iova] = append(mo.stale[iova], old)
	}
	if mp.perm == 0 {
		delete(mo.current, iova)
		return
	}
	mo.current[iova] = mp
	mo.allow(iova, mp)
}

// invalidated follows the IOMMU's own invalidation event, so that the model
// changes at the instant the IOTLB does.
func (mo *iotlbModel) invalidated(page uint64) {
	if page == sacc.InvalidateAll {
		clear(mo.stale)
		return
	}
	delete(mo.stale, page)
}

// fetched starts a new command's window: what is allowed now.
func (mo *iotlbModel) fetched() {
	clear(mo.window)
	for iova, mp := range mo.current {
		mo.allow(iova, mp)
	}
	for iova, old := range mo.stale {
		for _, mp := range old {
			mo.allow(iova, mp)
		}
	}
}

// checkDMA returns what is wrong with one DMA event, or "".
func (mo *iotlbModel) checkDMA(ev trace.Event) string {
	want := uint64(sacc.PTERead)
	if ev.Kind == trace.DMAWrite {
		want = sacc.PTEWrite
	}
	iova, phys, n := ev.Args[0], ev.Args[1], ev.Args[2]
	// An event's bytes are contiguous in both spaces (the device merges pieces
	// only when both are), so page k of the IOVA range went to page k of the
	// physical one.
	for off := uint64(0); off < n+iova&sacc.PageMask; off += sacc.PageSize {
		p := pagePair{(iova &^ sacc.PageMask) + off, (phys &^ sacc.PageMask) + off}
		if mo.window[p]&want == 0 {
			return fmt.Sprintf("%v: IOVA page %#x to physical page %#x was neither mapped nor awaiting invalidation", ev, p.iova, p.phys)
		}
		if cur, ok := mo.current[p.iova]; !ok || cur.phys != p.phys || cur.perm&want == 0 {
			mo.staleUses++
		}
	}
	return ""
}

// leafSlot is the address of iova's last-level entry, or 0 if an upper level is
// not present (then nothing is mapped there).
func leafSlot(m *machine.Machine, root, iova uint64) uint64 {
	table := root
	for level := 0; level < sacc.IOPTLevels-1; level++ {
		e := sacc.PTE(m.Read(table+sacc.IOVAIndex(iova, level)*sacc.IOPTEntrySize, 8))
		if !e.Present() {
			return 0
		}
		table = e.Addr()
	}
	return table + sacc.IOVAIndex(iova, sacc.IOPTLevels-1)*sacc.IOPTEntrySize
}

// FuzzIOMMUStaleIOTLB runs random commands while software maps, unmaps and
// remaps data pages and invalidates single pages or the whole IOTLB, with the
// clock run in between so that changes land while commands are in flight. The
// device must never touch a page that was neither mapped nor still awaiting
// invalidation (the window a stale IOTLB entry leaves open, §10), and a page that
// was never mapped writable keeps its contents.
func FuzzIOMMUStaleIOTLB(f *testing.F) {
	for _, seed := range staleSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if bad := staleIOTLBViolations(t, data, 0); len(bad) > 0 {
			t.Fatalf("the device went outside its window:\n%v", bad)
		}
	})
}

// The fuzz input's operations, as bytes, for seeds and tests. Pages are data
// pages 0 … stalePages-1; perm is 0 read, 1 write, 2 both.
func opMap(iova, phys, perm byte) []byte { return []byte{2, iova, phys, perm} }
func opUnmap(iova byte) []byte           { return []byte{3, iova} }
func opInvalidate(iova byte) []byte      { return []byte{4, iova} }
func opInvalidateAll() []byte            { return []byte{5} }
func opRing() []byte                     { return []byte{1} }
func opRun(units byte) []byte            { return []byte{6, units} }
func opPoll() []byte                     { return []byte{7} }

// opCopy is a MEMCPY of 32·lenUnits+1 bytes from the start of data page src to
// the start of data page dst (see the descriptor case of staleIOTLBViolations).
func opCopy(src, dst, lenUnits byte) []byte {
	return []byte{0, (src + 1) * 8, (dst + 1) * 8, lenUnits, 1}
}

func program(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// staleSeeds exercise each operation: map, run, unmap, run again before and
// after the invalidation, remap to another page while a command is in flight,
// invalidate all.
var staleSeeds = [][]byte{
	program(opMap(1, 1, 2), opCopy(1, 1, 16), opRing(), opRun(255), opPoll(), opUnmap(1),
		opCopy(1, 1, 16), opRing(), opRun(255), opPoll(), opInvalidate(1),
		opCopy(1, 1, 16), opRing(), opRun(255), opPoll()),
	program(opMap(2, 2, 0), opMap(3, 3, 2), opCopy(2, 3, 64), opRing(), opRun(100), opMap(3, 5, 2),
		opRun(255), opPoll(), opCopy(2, 3, 64), opRing(), opInvalidateAll(), opCopy(2, 3, 64), opRing(),
		opRun(255), opRun(255), opPoll()),
	program(opMap(0, 0, 2), opMap(1, 1, 2), opMap(2, 2, 2), opMap(3, 3, 2),
		opCopy(0, 1, 255), opCopy(2, 3, 255), opRing(), opRun(100), opUnmap(1), opRun(10), opUnmap(2),
		opInvalidate(2), opCopy(0, 1, 255), opRing(), opRun(250), opRun(250), opPoll(), opInvalidateAll(),
		opCopy(0, 1, 255), opRing(), opRun(250), opPoll()),
}

// staleIOTLBViolations plays data (see the op switch) against a machine with the
// IOMMU on and returns every access outside the model's window, and every page
// written that was never mapped writable.
func staleIOTLBViolations(t *testing.T, data []byte, quirks quirk.Set) []string {
	bad, _ := staleIOTLBRun(t, data, quirks)
	return bad
}

// staleIOTLBRun is staleIOTLBViolations that also says how many DMA pages only
// the stale window allowed.
func staleIOTLBRun(t *testing.T, data []byte, quirks quirk.Set) (bad []string, staleUses int) {
	t.Helper()
	m, err := machine.New(machine.Config{RAMSize: 16 << 20, Quirks: quirks})
	if err != nil {
		t.Fatal(err)
	}
	h, err := baremetal.Enumerate(m)
	if err != nil {
		t.Fatal(err)
	}
	pt, err := baremetal.NewPageTables(m, 0x0080_0000, 64*sacc.PageSize)
	if err != nil {
		t.Fatal(err)
	}
	mo := newIOTLBModel()
	mapPage := func(iova uint64, mp mapping) {
		if mp.perm == 0 {
			if slot := leafSlot(m, pt.Root, iova); slot != 0 {
				m.Write(slot, 8, 0)
			}
		} else if err := pt.Map(iova, mp.phys, mp.perm); err != nil {
			t.Fatal(err)
		}
		mo.set(iova, mp)
	}
	// The rings stay mapped throughout; the data pages start unmapped, filled
	// with the guard byte, with one page of guard either side.
	mapPage(baremetal.SQAddr, mapping{baremetal.SQAddr, sacc.PTERead})
	mapPage(baremetal.CQAddr, mapping{baremetal.CQAddr, sacc.PTERead | sacc.PTEWrite})
	m.Fill(staleData-sacc.PageSize, (stalePages+2)*sacc.PageSize, guardByte)
	iommu := baremetal.IOMMU{M: m}
	iommu.Enable(pt.Root, 0x0090_0000, 16)
	mo.fetched()

	m.Tracer().Attach(trace.Func(func(ev trace.Event) {
		switch ev.Kind {
		case trace.Fetch:
			mo.fetched()
		case trace.IOMMUInvalidate:
			mo.invalidated(ev.Args[0])
		case trace.DMARead, trace.DMAWrite:
			if s := mo.checkDMA(ev); s != "" {
				bad = append(bad, s)
			}
		}
	}))
	if err := h.Start(baremetal.SQAddr, 16, baremetal.CQAddr, 16); err != nil {
		t.Fatal(err)
	}
	page := func(b uint8) uint64 { return staleData + uint64(b%stalePages)*sacc.PageSize }
	drain := func() {
		for h.InFlight() > 0 {
			if _, err := h.Wait(1_000_000); err != nil {
				return
			}
		}
	}
	o := &ops{data}
	for n := 0; o.more() && n < 128; n++ {
		switch o.u8() % 8 {
		case 0: // a descriptor: source and destination within the data pages and a page either side
			span := uint64((stalePages + 2) * sacc.PageSize)
			d := sacc.Descriptor{
				Src:    staleData - sacc.PageSize + uint64(o.u8())<<9%span,
				Dst:    staleData - sacc.PageSize + uint64(o.u8())<<9%span,
				Length: uint32(o.u8())<<5 + 1,
				Opcode: uint16(o.u8() % 3),
				ReqID:  uint32(n),
			}
			if !h.Put(d) {
				drain()
				h.Put(d)
			}
		case 1: // the doorbell
			h.Ring()
		case 2: // map an IOVA page to a physical page
			iova, phys := page(o.u8()), page(o.u8())
			mapPage(iova, mapping{phys, uint64(o.u8()%3 + 1)})
		case 3: // unmap, without invalidating
			mapPage(page(o.u8()), mapping{})
		case 4: // invalidate one page
			iommu.Invalidate(page(o.u8()))
		case 5: // invalidate everything
			iommu.Invalidate(sacc.InvalidateAll)
		case 6: // let the device run a while
			m.Advance(sim.Time(o.u8()) * 20)
		case 7: // consume what has completed
			for {
				if _, ok := h.Poll(); !ok {
					break
				}
			}
		}
	}
	h.Ring()
	drain()
	m.Advance(1_000_000)

	// Whatever the trace says, the guard pages and the data pages never mapped
	// writable still hold the guard byte.
	var b [sacc.PageSize]byte
	for p := uint64(staleData - sacc.PageSize); p < staleData+(stalePages+1)*sacc.PageSize; p += sacc.PageSize {
		if mo.written[p] {
			continue
		}
		m.RAM().Read(p, b[:])
		for i, c := range b {
			if c != guardByte {
				bad = append(bad, fmt.Sprintf("page %#x, never mapped writable, has %#x at offset %#x", p, c, i))
				break
			}
		}
	}
	return bad, mo.staleUses
}

// TestStaleIOTLBCheckSeesIgnoredInvalidate proves the check can fail: with the
// IOMMU ignoring invalidations, a command run after a page was unmapped and
// invalidated still reaches it through the stale entry.
func TestStaleIOTLBCheckSeesIgnoredInvalidate(t *testing.T) {
	data := program(opMap(1, 1, 2), opCopy(1, 1, 16), opRing(), opRun(255), opPoll(),
		opUnmap(1), opInvalidate(1), opCopy(1, 1, 16), opRing(), opRun(255), opPoll())
	if bad := staleIOTLBViolations(t, data, 0); len(bad) > 0 {
		t.Fatalf("as specified: %v", bad)
	}
	q, err := quirk.Parse("iotlb-ignores-invalidate")
	if err != nil {
		t.Fatal(err)
	}
	if bad := staleIOTLBViolations(t, data, q); len(bad) == 0 {
		t.Fatal("with invalidations ignored, the device should have reached the unmapped page")
	}
}

// TestStaleIOTLBWindowIsUsed checks that the seeds reach the window the fuzzer
// is about: the device uses a translation after its page was unmapped or
// remapped and before the invalidation, and that is not taken for a violation.
func TestStaleIOTLBWindowIsUsed(t *testing.T) {
	for i, seed := range staleSeeds {
		bad, uses := staleIOTLBRun(t, seed, 0)
		if len(bad) > 0 {
			t.Errorf("seed %d: %v", i, bad)
		}
		if uses == 0 {
			t.Errorf("seed %d: the device never used a stale translation", i)
		}
	}
	// Without the invalidation's event the model would keep the stale entry
	// forever; a copy after the invalidation must fault rather than reach it.
	data := program(opMap(1, 1, 2), opCopy(1, 1, 16), opRing(), opRun(255), opPoll(),
		opUnmap(1), opInvalidate(1), opCopy(1, 1, 16), opRing(), opRun(255), opPoll())
	if _, uses := staleIOTLBRun(t, data, 0); uses != 0 {
		t.Errorf("after the invalidation the device still used %d stale pages", uses)
	}
}
