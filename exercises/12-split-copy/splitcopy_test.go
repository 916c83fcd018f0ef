package splitcopy

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/sgrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/sim"
)

const budget sim.Time = 1_000_000 // 1 ms: Split does arithmetic only

func pieces(r *sgrig.Rig, va, n uint64) []Piece {
	var out []Piece
	for _, s := range r.Truth(va, n) {
		out = append(out, Piece{s.Phys, s.Len})
	}
	return out
}

func showDescs(ds []sacc.Descriptor) string {
	var b strings.Builder
	for i, d := range ds {
		if i == 16 {
			fmt.Fprintf(&b, "  … and %d more\n", len(ds)-i)
			break
		}
		fmt.Fprintf(&b, "  [%d] src %#x dst %#x len %#x opcode %#x\n", i, d.Src, d.Dst, d.Length, d.Opcode)
	}
	return b.String()
}

// inside reports whether [a, a+n) lies inside one piece of list.
func inside(list []Piece, a, n uint64) bool {
	for _, p := range list {
		if a >= p.Addr && a+n <= p.Addr+p.Len {
			return true
		}
	}
	return false
}

// needed is the number of descriptors the copy needs: one per stretch between
// the offsets at which a piece ends on either side, and a stretch longer than
// 1 MiB takes as many as it holds MiBs, rounded up.
func needed(src, dst []Piece) int {
	ends := map[uint64]bool{}
	var o uint64
	for _, p := range src {
		o += p.Len
		ends[o] = true
	}
	o = 0
	for _, p := range dst {
		o += p.Len
		ends[o] = true
	}
	var cuts []uint64
	for e := range ends {
		cuts = append(cuts, e)
	}
	slices.Sort(cuts)
	n, prev := 0, uint64(0)
	for _, c := range cuts {
		n += int((c - prev + sacc.MaxLength - 1) / sacc.MaxLength)
		prev = c
	}
	return n
}

// TestCopiesBetweenScatteredBuffers splits copies between buffers whose pages
// are scattered and whose offsets differ, and runs them through the device.
func TestCopiesBetweenScatteredBuffers(t *testing.T) {
	for _, tc := range []struct {
		what           string
		srcOff, dstOff uint64
		n              uint64
	}{
		{"12 KiB, both 0x800 into a page", 0x800, 0x800, 12 << 10},
		{"12 KiB, source 0x800 and destination 0x100 into a page", 0x800, 0x100, 12 << 10},
		{"0x1801 bytes, source on a page, destination at 0xFFF", 0, 0xFFF, 0x1801},
		{"0x40 bytes inside one page on each side", 0x10, 0x20, 0x40},
	} {
		t.Run(tc.what, func(t *testing.T) {
			r := sgrig.Up(t)
			sva, data := r.Buffer(tc.srcOff, tc.n, 0x41)
			dva, _ := r.Buffer(tc.dstOff, tc.n, 0x00)
			src, dst := pieces(r, sva, tc.n), pieces(r, dva, tc.n)
			// What surrounds each destination piece must not change.
			type around struct{ addr, n uint64 }
			var guard []around
			for _, p := range dst {
				page := p.Addr &^ sacc.PageMask
				if p.Addr > page {
					guard = append(guard, around{page, p.Addr - page})
				}
				if end := p.Addr + p.Len; end&sacc.PageMask != 0 {
					guard = append(guard, around{end, sacc.PageSize - end&sacc.PageMask})
				}
			}
			before := map[uint64][]byte{}
			for _, g := range guard {
				before[g.addr] = r.Read(g.addr, g.n)
			}
			var ds []sacc.Descriptor
			var err error
			r.Do("Split", budget, func() { ds, err = Split(src, dst) })
			if err != nil {
				r.Fatalf("Split returned an error for %s: %v", tc.what, err)
			}
			for i, d := range ds {
				if d.Length > sacc.MaxLength {
					r.Fatalf("Descriptor %d of %s is %d bytes long: the device accepts at most 1 MiB (sacc.MaxLength) in one "+
						"descriptor and fails a longer one with status 3 (§6.3). Cut where 1 MiB is full too.", i, tc.what, d.Length)
				}
				if d.Opcode != sacc.OpMEMCPY || d.Length == 0 || !inside(src, d.Src, uint64(d.Length)) || !inside(dst, d.Dst, uint64(d.Length)) {
					side := "destination"
					if !inside(src, d.Src, uint64(d.Length)) {
						side = "source"
					}
					r.Fatalf("Descriptor %d of %s is %+v, which is not a MEMCPY within one %s piece. The source pieces:\n%s"+
						"the destination pieces:\n%syour descriptors:\n%s"+
						"A descriptor ends where a source piece or a destination piece ends, whichever comes first.",
						i, tc.what, d, side, showPieces(src), showPieces(dst), showDescs(ds))
				}
			}
			if want := needed(src, dst); len(ds) != want {
				r.Fatalf("Split cut %s into %d descriptors; %d are needed, one per stretch that is contiguous on both sides, "+
					"and no more:\n%s", tc.what, len(ds), want, showDescs(ds))
			}
			reqs := make([]*driver.Request, len(ds))
			for i, d := range ds {
				reqs[i] = &driver.Request{Opcode: d.Opcode, Src: d.Src, Dst: d.Dst, Length: d.Length}
			}
			if _, err := r.Dev.SubmitBatch(reqs); err != nil {
				t.Fatalf("check: submit: %v", err)
			}
			for i, req := range reqs {
				if err := r.Dev.Wait(req); err != nil {
					r.Fatalf("The device could not run descriptor %d (%+v): %v", i, ds[i], err)
				}
			}
			got := make([]byte, 0, tc.n)
			for _, p := range dst {
				got = append(got, r.Read(p.Addr, p.Len)...)
			}
			if !bytes.Equal(got, data) {
				r.Fatalf("The device ran your %d descriptors, and the destination does not hold the source: the pieces were "+
					"copied in the wrong order or to the wrong places.\n%s", len(ds), showDescs(ds))
			}
			for _, g := range guard {
				if !bytes.Equal(r.Read(g.addr, g.n), before[g.addr]) {
					r.Fatalf("The copy changed %d bytes at %#x, next to a destination piece, in a page the destination buffer "+
						"does not own there.", g.n, g.addr)
				}
			}
		})
	}
}

func showPieces(list []Piece) string {
	var b strings.Builder
	for i, p := range list {
		fmt.Fprintf(&b, "  [%d] %#x len %#x\n", i, p.Addr, p.Len)
	}
	return b.String()
}

// TestLengthsMustAgree: two lists of different totals are an error.
func TestLengthsMustAgree(t *testing.T) {
	r := sgrig.Up(t)
	var err error
	r.Do("Split", budget, func() {
		_, err = Split([]Piece{{0x100000, 0x1000}}, []Piece{{0x200000, 0x800}})
	})
	if err == nil {
		r.Fatalf("Split of 0x1000 source bytes into 0x800 destination bytes returned no error.")
	}
}

// TestPiecesOfSeveralMiB: physically contiguous pieces longer than a
// descriptor may be.
func TestPiecesOfSeveralMiB(t *testing.T) {
	r := sgrig.Up(t)
	const n = 5<<19 + 0x1000 // 2.5 MiB and a page
	sbuf, err := r.K.AllocPages(n)
	if err != nil {
		t.Fatal(err)
	}
	d1, err := r.K.AllocPages(3 << 19) // 1.5 MiB
	if err != nil {
		t.Fatal(err)
	}
	d2, err := r.K.AllocPages(n - 3<<19)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i/4096 + i%7)
	}
	r.M.RAM().Write(sbuf, data)
	src := []Piece{{sbuf, n}}
	dst := []Piece{{d1, 3 << 19}, {d2, n - 3<<19}}
	var ds []sacc.Descriptor
	r.Do("Split", budget, func() { ds, err = Split(src, dst) })
	if err != nil {
		r.Fatalf("Split of one 2.5 MiB source piece into pieces of 1.5 MiB and 1 MiB returned an error: %v", err)
	}
	for i, d := range ds {
		switch {
		case d.Length > sacc.MaxLength:
			r.Fatalf("Descriptor %d is %d bytes long: the device accepts at most 1 MiB (sacc.MaxLength) in one descriptor and "+
				"fails a longer one with status 3 (§6.3). Cut where 1 MiB is full too.\n%s", i, d.Length, showDescs(ds))
		case d.Opcode != sacc.OpMEMCPY || d.Length == 0 || !inside(src, d.Src, uint64(d.Length)) || !inside(dst, d.Dst, uint64(d.Length)):
			r.Fatalf("Descriptor %d is %+v, which is not a MEMCPY within one source piece and one destination piece.\n%s", i, d, showDescs(ds))
		}
	}
	if want := needed(src, dst); len(ds) != want {
		r.Fatalf("Split cut the copy into %d descriptors; %d are needed: a new one only where a piece ends or 1 MiB is full.\n%s",
			len(ds), want, showDescs(ds))
	}
	reqs := make([]*driver.Request, len(ds))
	for i, d := range ds {
		reqs[i] = &driver.Request{Opcode: d.Opcode, Src: d.Src, Dst: d.Dst, Length: d.Length}
	}
	if _, err := r.Dev.SubmitBatch(reqs); err != nil {
		t.Fatalf("check: submit: %v", err)
	}
	for i, req := range reqs {
		if err := r.Dev.Wait(req); err != nil || req.Status != sacc.StatusOK {
			r.Fatalf("The device could not run descriptor %d (%+v): %v, status %v", i, ds[i], err, req.Status)
		}
	}
	got := append(r.Read(d1, 3<<19), r.Read(d2, n-3<<19)...)
	if !bytes.Equal(got, data) {
		r.Fatalf("The device ran your %d descriptors, and the destination does not hold the source.\n%s", len(ds), showDescs(ds))
	}
}
