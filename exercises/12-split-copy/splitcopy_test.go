package splitcopy

import (
	"bytes"
	"fmt"
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

// boundaries is the number of descriptors the copy needs: the distinct offsets
// at which a piece ends on either side.
func boundaries(src, dst []Piece) int {
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
	return len(ends)
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
			if want := boundaries(src, dst); len(ds) != want {
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
