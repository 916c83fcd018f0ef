package mapiova

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/iorig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 1_000_000 // 1 ms: mapping a page takes a few µs at most

// IOVAs the tests map, far from RAM so they cannot be mistaken for physical
// addresses.
const (
	iovaA = 0x4000_0000
	iovaB = 0x4000_1000
	iovaC = 0x4000_2000
)

// rig is the harness plus a count of the tables the learner asked for.
type rig struct {
	*iorig.Rig
	tables int
}

func setUp(t *testing.T, arch cpu.Arch) *rig {
	return &rig{Rig: iorig.Up(t, host.Config{CPU: cpu.Config{Arch: arch}}, 8)}
}

func (r *rig) newTable() (uint64, error) {
	r.tables++
	return r.Page(), nil
}

// mapPage calls the learner's MapPage and returns its error and the events.
func (r *rig) mapPage(iova, phys uint64, dir kernel.Direction) ([]trace.Event, error) {
	var err error
	mark := r.Mark()
	r.Do("MapPage", budget, func() { err = MapPage(r.CPU, r.newTable, r.Root, iova, phys, dir) })
	return r.Since(mark), err
}

// mustMap maps and checks the tables say what they should.
func (r *rig) mustMap(iova, phys uint64, dir kernel.Direction, perm uint64) {
	_, err := r.mapPage(iova, phys, dir)
	if err != nil {
		r.Fatalf("MapPage(iova %#x, phys %#x, %v) returned an error: %v", iova, phys, dir, err)
	}
	got, rights, ok := r.Walk(iova)
	if !ok {
		r.Fatalf("MapPage(iova %#x, phys %#x, %v) returned nil, but right after it the IOMMU's walk of IOVA %#x finds no leaf "+
			"in RAM.\n%s", iova, phys, dir, iova, r.walkReport(iova))
	}
	if got != phys {
		r.Fatalf("After MapPage(iova %#x, phys %#x, %v), IOVA %#x leads to physical page %#x, not %#x.\n%s",
			iova, phys, dir, iova, got, phys, r.walkReport(iova))
	}
	if rights != perm {
		r.Fatalf("After MapPage(iova %#x, phys %#x, %v), the device's rights on the page are %s; want %s.\n"+
			"The rights are the AND of all four levels: entries that point at tables should allow both, "+
			"and the leaf gets what the direction allows (%v: %s).\n%s",
			iova, phys, dir, iorig.PermName(rights), iorig.PermName(perm), dir, iorig.PermName(perm), r.walkReport(iova))
	}
}

// walkReport shows the four levels of the walk for iova as they are in RAM.
func (r *rig) walkReport(iova uint64) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "The walk for IOVA %#x from PT_ROOT %#x, as the IOMMU reads RAM now:\n", iova, r.Root)
	steps := r.M.IOMMU().Walk(iova)
	for _, s := range steps {
		fmt.Fprintf(&b, "  level %d: table %#x, index %3d: entry 0x%016x", s.Level, s.Table, s.Index, uint64(s.Entry))
		if !s.Entry.Present() {
			b.WriteString(" (absent)")
		} else {
			fmt.Fprintf(&b, " (%s, address %#x)", iorig.PermName(s.Entry.Perm()), s.Entry.Addr())
		}
		b.WriteString("\n")
	}
	if r.CPU.Pending() > 0 {
		fmt.Fprintf(&b, "%d stores of the CPU are still in its store buffer, not yet in RAM: the IOMMU cannot see them. "+
			"Did MapPage end with a write barrier (WMB)?\n", r.CPU.Pending())
	}
	return b.String()
}

// TestMapOnePage maps a source buffer and has the device copy from it.
func TestMapOnePage(t *testing.T) {
	for _, arch := range []cpu.Arch{cpu.X86, cpu.ARM64} {
		t.Run(arch.String(), func(t *testing.T) {
			r := setUp(t, arch)
			data := bytes.Repeat([]byte("mapped!!"), 16)
			src := r.Buffer(t, data)
			dst := r.Page()
			r.mustMap(iovaA, src, kernel.DMAToDevice, sacc.PTERead)
			if err := r.Map(iovaB, dst, sacc.PTEWrite); err != nil {
				t.Fatal(err)
			}
			c, ok := r.Copy(iovaA, iovaB, uint32(len(data)))
			if !ok || c.Status != sacc.StatusOK {
				faults := r.Faults()
				msg := ""
				for _, f := range faults {
					msg += "  " + iorig.Describe(f) + "\n"
				}
				r.Fatalf("The device copied from IOVA %#x (your mapping) to %#x (the test's): completion %+v (arrived %v).\n"+
					"The IOMMU's fault log:\n%s", iovaA, iovaB, c, ok, msg)
			}
			got := make([]byte, len(data))
			r.M.RAM().Read(dst, got)
			if !bytes.Equal(got, data) {
				r.Fatalf("The device copied through your mapping, but the destination holds % x…, not % x….", got[:8], data[:8])
			}
		})
	}
}

// TestRightsFollowTheDirection maps three pages, one per direction, and checks
// the rights in the tables and what the device may do.
func TestRightsFollowTheDirection(t *testing.T) {
	r := setUp(t, cpu.X86)
	toDev, fromDev, both := r.Buffer(t, bytes.Repeat([]byte{0x5A}, 64)), r.Page(), r.Page()
	r.mustMap(iovaA, toDev, kernel.DMAToDevice, sacc.PTERead)
	r.mustMap(iovaB, fromDev, kernel.DMAFromDevice, sacc.PTEWrite)
	r.mustMap(iovaC, both, kernel.DMABidirectional, sacc.PTERead|sacc.PTEWrite)
	for _, tc := range []struct {
		what     string
		src, dst uint64
		fault    sacc.FaultReason
	}{
		{"read the DMA_TO_DEVICE page, write the DMA_FROM_DEVICE page", iovaA, iovaB, 0},
		{"read the DMA_TO_DEVICE page, write the DMA_BIDIRECTIONAL page", iovaA, iovaC, 0},
		{"read the DMA_BIDIRECTIONAL page, write the DMA_FROM_DEVICE page", iovaC, iovaB, 0},
		{"read the DMA_FROM_DEVICE page", iovaB, iovaC, sacc.FaultReadDenied},
		{"write the DMA_TO_DEVICE page", iovaC, iovaA, sacc.FaultWriteDenied},
	} {
		c, ok := r.Copy(tc.src, tc.dst, 64)
		faults := r.Faults()
		switch {
		case !ok:
			r.Fatalf("%s: no completion came.", tc.what)
		case tc.fault == 0 && c.Status != sacc.StatusOK:
			r.Fatalf("%s: the device should be allowed to, but the copy ended with status %v; the IOMMU logged %d faults.", tc.what, c.Status, len(faults))
		case tc.fault != 0 && (c.Status != sacc.StatusBadAddress || len(faults) != 1 || faults[0].Reason != tc.fault):
			r.Fatalf("%s: the device must be refused (fault reason %d, %v), but the copy ended with status %v and %d faults.",
				tc.what, tc.fault, tc.fault, c.Status, len(faults))
		}
	}
}

// TestTablesAreShared maps pages that share tables with the rings and with each
// other: existing tables must be used, not replaced.
func TestTablesAreShared(t *testing.T) {
	r := setUp(t, cpu.X86)
	// The SQ is mapped at its physical address by the harness; a page sixteen
	// pages further shares its leaf table.
	near := r.SQ&^sacc.PageMask + 16*sacc.PageSize
	buf := r.Buffer(t, bytes.Repeat([]byte{0xC3}, 64))
	_, err := r.mapPage(near, buf, kernel.DMAToDevice)
	if err != nil {
		r.Fatalf("MapPage(iova %#x, phys %#x, DMA_TO_DEVICE) returned an error: %v", near, buf, err)
	}
	if r.tables != 0 {
		r.Fatalf("IOVA %#x shares all its tables with the SQ's mapping at %#x, yet MapPage asked newTable for %d tables. "+
			"An entry that is present already points at a table: follow it.", near, r.SQ&^sacc.PageMask, r.tables)
	}
	if _, _, ok := r.Walk(r.SQ); !ok {
		r.Fatalf("After MapPage(iova %#x), the SQ's own mapping at %#x is gone: MapPage replaced a table that other "+
			"mappings use.\n%s", near, r.SQ&^sacc.PageMask, r.walkReport(r.SQ))
	}
	r.mustMap(iovaA, r.Page(), kernel.DMAFromDevice, sacc.PTEWrite)
	before := r.tables
	r.mustMap(iovaB, r.Page(), kernel.DMAFromDevice, sacc.PTEWrite)
	if r.tables != before {
		r.Fatalf("IOVA %#x is in the same leaf table as %#x, mapped just before, yet MapPage asked for %d more tables.", iovaB, iovaA, r.tables-before)
	}
	if _, _, ok := r.Walk(iovaA); !ok {
		r.Fatalf("Mapping %#x unmapped its neighbour %#x: MapPage replaced the leaf table they share.\n%s", iovaB, iovaA, r.walkReport(iovaA))
	}
	dst := r.Page()
	if err := r.Map(iovaC, dst, sacc.PTEWrite); err != nil {
		t.Fatal(err)
	}
	if c, ok := r.Copy(near, iovaC, 64); !ok || c.Status != sacc.StatusOK {
		r.Fatalf("The device could not copy from %#x after your mappings: completion %+v (arrived %v).", near, c, ok)
	}
	if evs := check.Find(r.Events(), trace.DeviceError); len(evs) > 0 {
		r.Fatalf("The device halted:\n%s", check.Lines(evs))
	}
}

// TestRefusesBadArguments: nothing may be written for an IOVA or a physical
// address that is not a page, or an IOVA beyond 48 bits.
func TestRefusesBadArguments(t *testing.T) {
	r := setUp(t, cpu.X86)
	page := r.Page()
	for _, tc := range []struct {
		what        string
		iova, phys  uint64
		walkAt      uint64
		mustNotWalk bool
	}{
		{"an IOVA inside a page", iovaA + 0x800, page, iovaA, true},
		{"a physical address inside a page", iovaB, page + 0x10, iovaB, true},
		{"an IOVA of 49 bits", sacc.IOVALimit + iovaC, page, 0, false},
	} {
		evs, err := r.mapPage(tc.iova, tc.phys, kernel.DMAFromDevice)
		if err == nil {
			r.Fatalf("MapPage was given %s (iova %#x, phys %#x) and returned nil; it must return an error.", tc.what, tc.iova, tc.phys)
		}
		if w := check.Find(evs, trace.CPUWrite); len(w) > 0 || r.tables > 0 {
			r.Fatalf("MapPage was given %s and returned an error, but first it wrote to memory (%d stores, %d new tables):\n%s"+
				"Check the arguments before you touch the tables.", tc.what, len(w), r.tables, check.Lines(w))
		}
		if _, _, ok := r.Walk(tc.walkAt); tc.mustNotWalk && ok {
			r.Fatalf("MapPage was given %s and returned an error, but IOVA %#x is mapped now.", tc.what, tc.walkAt)
		}
	}
}

// TestPassesOnANewTableError: the kernel is out of pages for tables.
func TestPassesOnANewTableError(t *testing.T) {
	r := setUp(t, cpu.X86)
	asked := 0
	noPages := func() (uint64, error) {
		asked++
		return 0, errors.New("out of memory for I/O page tables")
	}
	var err error
	r.Do("MapPage", budget, func() { err = MapPage(r.CPU, noPages, r.Root, iovaA, r.Page(), kernel.DMAToDevice) })
	switch {
	case asked == 0:
		r.Fatalf("IOVA %#x needs new tables (nothing is mapped near it), yet MapPage never asked newTable for one.", uint64(iovaA))
	case err == nil:
		r.Fatalf("newTable failed (out of memory), yet MapPage returned nil: the page is not mapped. Return newTable's error.")
	}
	if _, _, ok := r.Walk(iovaA); ok {
		r.Fatalf("newTable failed, yet IOVA %#x is mapped.", uint64(iovaA))
	}
}
