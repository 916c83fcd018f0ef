package baremetal

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/machine"
)

// PageTables builds 4-level I/O page tables in RAM by plain CPU stores, taking
// table pages from a bump allocator.
type PageTables struct {
	M    *machine.Machine
	Root uint64
	next uint64
	end  uint64
}

// NewPageTables allocates tables from [base, base+size) (4 KiB aligned), zeroing
// each page it takes.
func NewPageTables(m *machine.Machine, base, size uint64) (*PageTables, error) {
	pt := &PageTables{M: m, next: base, end: base + size}
	root, err := pt.alloc()
	if err != nil {
		return nil, err
	}
	pt.Root = root
	return pt, nil
}

func (pt *PageTables) alloc() (uint64, error) {
	if pt.next+sacc.PageSize > pt.end {
		return 0, fmt.Errorf("page-table area exhausted at %#x", pt.next)
	}
	p := pt.next
	pt.next += sacc.PageSize
	pt.M.Fill(p, sacc.PageSize, 0)
	return p, nil
}

// Map maps the IOVA page of iova to the physical page of phys with perm
// (sacc.PTERead, sacc.PTEWrite). Intermediate entries allow both, so the leaf
// decides.
func (pt *PageTables) Map(iova, phys, perm uint64) error {
	table := pt.Root
	for level := 0; level < sacc.IOPTLevels-1; level++ {
		slot := table + sacc.IOVAIndex(iova, level)*sacc.IOPTEntrySize
		e := sacc.PTE(pt.M.Read(slot, 8))
		if !e.Present() {
			next, err := pt.alloc()
			if err != nil {
				return err
			}
			e = sacc.MakePTE(next, sacc.PTERead|sacc.PTEWrite)
			pt.M.Write(slot, 8, uint64(e))
		}
		table = e.Addr()
	}
	leaf := table + sacc.IOVAIndex(iova, sacc.IOPTLevels-1)*sacc.IOPTEntrySize
	pt.M.Write(leaf, 8, uint64(sacc.MakePTE(phys, perm)))
	return nil
}

// MapRange maps n bytes from iova to phys, page by page.
func (pt *PageTables) MapRange(iova, phys, n, perm uint64) error {
	for off := uint64(0); off < n; off += sacc.PageSize {
		if err := pt.Map(iova+off, phys+off, perm); err != nil {
			return err
		}
	}
	return nil
}

// IOMMU programs the IOMMU register block.
type IOMMU struct{ M *machine.Machine }

func (u IOMMU) reg(off uint64) uint64 { return sacc.IOMMUBase + off }

// Enable points the IOMMU at the tables and a fault log and turns translation on.
func (u IOMMU) Enable(root, faultLog uint64, faultSize uint32) {
	u.M.Write(u.reg(sacc.IOMMURegPTRoot), 8, root)
	u.M.Write(u.reg(sacc.IOMMURegFaultBase), 8, faultLog)
	u.M.Write(u.reg(sacc.IOMMURegFaultSize), 4, uint64(faultSize))
	u.M.Write(u.reg(sacc.IOMMURegFaultHead), 4, 0)
	u.M.Write(u.reg(sacc.IOMMURegCTRL), 4, sacc.IOMMUCtrlTranslate)
}

// Invalidate flushes one IOVA page, or everything with sacc.InvalidateAll.
func (u IOMMU) Invalidate(iova uint64) { u.M.Write(u.reg(sacc.IOMMURegInvalidate), 8, iova) }

// Faults reads and consumes every new fault record.
func (u IOMMU) Faults() []sacc.FaultRecord {
	base := u.M.Read(u.reg(sacc.IOMMURegFaultBase), 8)
	size := u.M.Read(u.reg(sacc.IOMMURegFaultSize), 4)
	head := u.M.Read(u.reg(sacc.IOMMURegFaultHead), 4)
	tail := u.M.Read(u.reg(sacc.IOMMURegFaultTail), 4)
	var out []sacc.FaultRecord
	var b [sacc.FaultRecordSize]byte
	for size > 0 && head != tail {
		u.M.ReadBytes(base+head*sacc.FaultRecordSize, b[:])
		out = append(out, sacc.DecodeFaultRecord(b[:]))
		head = (head + 1) % size
	}
	u.M.Write(u.reg(sacc.IOMMURegFaultHead), 4, head)
	return out
}
