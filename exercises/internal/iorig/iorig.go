// Package iorig is what the exercises of chapter 09 share: a machine with the
// SACC running (package ringrig) and the IOMMU switched on by the harness, with
// I/O page tables of its own. The harness maps the rings itself, with its own
// reference code, so that the learner's mapping code is the only part of a test
// that can go wrong; and it copies through the device with ordinary
// descriptors, reading the completions straight from RAM.
package iorig

import (
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
)

// FaultLogSize is the number of records in the harness's fault log.
const FaultLogSize = 16

// Rig is a running SACC behind an IOMMU whose tables the harness owns.
type Rig struct {
	*ringrig.Rig
	Root     uint64 // PT_ROOT: the top-level table
	FaultLog uint64 // FAULT_BASE
	reader   *ringrig.Reader
	t        testing.TB
}

// Up boots a machine without a kernel IOMMU domain, brings the device up with
// rings of size entries, builds an empty set of I/O page tables, maps both rings
// at their physical addresses (read and write), and turns translation on.
func Up(t testing.TB, cfg host.Config, size uint32) *Rig {
	t.Helper()
	r := &Rig{Rig: ringrig.Up(t, cfg, size), reader: ringrig.NewReader(), t: t}
	r.Root = r.Page()
	var err error
	if r.FaultLog, err = r.K.AllocPages(FaultLogSize * sacc.FaultRecordSize); err != nil {
		t.Fatalf("check: allocate the fault log: %v", err)
	}
	for _, ring := range []uint64{r.SQ, r.CQ} {
		if err := r.Map(ring&^sacc.PageMask, ring&^sacc.PageMask, sacc.PTERead|sacc.PTEWrite); err != nil {
			t.Fatalf("check: map a ring: %v", err)
		}
	}
	c, base := r.CPU, uint64(sacc.IOMMUBase)
	c.Writeq(base+sacc.IOMMURegPTRoot, r.Root)
	c.Writeq(base+sacc.IOMMURegFaultBase, r.FaultLog)
	c.Writel(base+sacc.IOMMURegFaultSize, FaultLogSize)
	c.Writel(base+sacc.IOMMURegFaultHead, 0)
	c.Writeq(base+sacc.IOMMURegInvalidate, sacc.InvalidateAll)
	c.Writel(base+sacc.IOMMURegCTRL, sacc.IOMMUCtrlTranslate)
	return r
}

// Page allocates a zeroed page of kernel memory (for a table or a buffer).
func (r *Rig) Page() uint64 {
	r.t.Helper()
	p, err := r.K.AllocPages(sacc.PageSize)
	if err != nil {
		r.t.Fatalf("check: allocate a page: %v", err)
	}
	return p
}

// Map is the harness's own iommu_map: IOVA page iova → physical page phys with
// perm, creating missing tables (with both rights, so the leaf decides).
func (r *Rig) Map(iova, phys, perm uint64) error {
	c := r.CPU
	table := r.Root
	for level := 0; level < sacc.IOPTLevels-1; level++ {
		slot := table + sacc.IOVAIndex(iova, level)*sacc.IOPTEntrySize
		e := sacc.PTE(c.Load64(slot))
		if !e.Present() {
			next := r.Page()
			e = sacc.MakePTE(next, sacc.PTERead|sacc.PTEWrite)
			c.Store64(slot, uint64(e))
		}
		table = e.Addr()
	}
	c.Store64(table+sacc.IOVAIndex(iova, sacc.IOPTLevels-1)*sacc.IOPTEntrySize, uint64(sacc.MakePTE(phys, perm)))
	c.WMB()
	return nil
}

// Walk describes what the tables in RAM say about iova now: the physical page
// and the effective rights, or ok = false if some level is not present.
func (r *Rig) Walk(iova uint64) (phys, perm uint64, ok bool) {
	steps := r.M.IOMMU().Walk(iova)
	if len(steps) != sacc.IOPTLevels {
		return 0, 0, false
	}
	perm = sacc.PTEPermMask
	for _, s := range steps {
		if !s.Entry.Present() {
			return 0, 0, false
		}
		perm &= s.Entry.Perm()
	}
	return steps[len(steps)-1].Entry.Addr(), perm, true
}

// Cached is what the IOTLB holds for the page of iova, if anything.
func (r *Rig) Cached(iova uint64) (phys uint64, ok bool) {
	for _, e := range r.M.IOMMU().IOTLB() {
		if e.IOVAPage == iova&^sacc.PageMask {
			return e.PhysPage, true
		}
	}
	return 0, false
}

// Copy has the device copy n bytes from IOVA src to IOVA dst and waits (at most
// 200 µs) for the completion, which it reads from RAM; it hands the slot back
// with CQ_HEAD. ok is false if no completion came.
func (r *Rig) Copy(src, dst uint64, n uint32) (c sacc.Completion, ok bool) {
	r.Submit(sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: n})
	r.Until(200_000, 200, func() bool {
		c, ok = r.reader.Next(r.Rig)
		return ok
	})
	if ok {
		r.Regs.Writel(sacc.RegCQHead, r.reader.Head)
	}
	return c, ok
}

// Faults reads and consumes the new fault records.
func (r *Rig) Faults() []sacc.FaultRecord {
	st := r.M.IOMMU().State()
	var out []sacc.FaultRecord
	head := st.FaultHead % FaultLogSize
	for head != st.FaultTail {
		var b [sacc.FaultRecordSize]byte
		r.M.RAM().Read(r.FaultLog+uint64(head)*sacc.FaultRecordSize, b[:])
		out = append(out, sacc.DecodeFaultRecord(b[:]))
		head = (head + 1) % FaultLogSize
	}
	r.CPU.Writel(sacc.IOMMUBase+sacc.IOMMURegFaultHead, head)
	return out
}

// Describe is a fault record in words.
func Describe(f sacc.FaultRecord) string {
	access := map[uint8]string{sacc.AccessRead: "read", sacc.AccessWrite: "write"}[f.Access]
	return fmt.Sprintf("a %s of IOVA %#x refused, reason %d (%v)", access, f.IOVA, f.Reason, f.Reason)
}

// PermName is a right set as the chapter writes it: r-, -w, rw or --.
func PermName(perm uint64) string {
	b := []byte("--")
	if perm&sacc.PTERead != 0 {
		b[0] = 'r'
	}
	if perm&sacc.PTEWrite != 0 {
		b[1] = 'w'
	}
	return string(b)
}
