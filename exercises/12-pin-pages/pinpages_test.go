package pinpages

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

const budget sim.Time = 1_000_000 // 1 ms: pinning a few pages takes no time at all

func pin(r *sgrig.Rig, va, n uint64) ([]Piece, error) {
	var sg []Piece
	var err error
	var beyond []uint64 // pages asked for past the buffer's last one
	last := (va + n - 1) &^ uint64(sacc.PageMask)
	record := func(page uint64) (uint64, error) {
		if n > 0 && page > last {
			beyond = append(beyond, page)
		}
		return r.PinPage(page)
	}
	r.Do("Pin", budget, func() { sg, err = Pin(record, r.UnpinPage, va, n) })
	if len(beyond) > 0 {
		r.Fatalf("Pin(va %#x, n %#x) asked pin for page %#x, past the buffer's last page %#x: the buffer ends at %#x, and a "+
			"buffer that ends exactly on a page boundary does not touch the next page. (Pin returned %d pieces and the error %v.)",
			va, n, beyond[0], last, va+n, len(sg), err)
	}
	return sg, err
}

func show(sg []Piece) string {
	var b strings.Builder
	for i, p := range sg {
		fmt.Fprintf(&b, "  [%d] phys %#x len %#x\n", i, p.Phys, p.Len)
	}
	if len(sg) == 0 {
		b.WriteString("  (none)\n")
	}
	return b.String()
}

// TestShapes pins buffers of every shape and compares with pin_user_pages, then
// has the device copy each piece and compares with what the process wrote.
func TestShapes(t *testing.T) {
	for _, tc := range []struct {
		what   string
		off, n uint64
	}{
		{"12 KiB starting 0x800 into a page", 0x800, 12 << 10},
		{"8 KiB starting on a page", 0, 8 << 10},
		{"0x20 bytes across a page boundary", 0xFF0, 0x20},
		{"0x100 bytes inside one page", 0x100, 0x100},
		{"one byte, the last of a page", 0xFFF, 1},
	} {
		t.Run(tc.what, func(t *testing.T) {
			r := sgrig.Up(t)
			va, data := r.Buffer(tc.off, tc.n, 0x31)
			sg, err := pin(r, va, tc.n)
			if err != nil {
				r.Fatalf("Pin(va %#x, n %#x), %s, returned an error: %v", va, tc.n, tc.what, err)
			}
			truth := r.Truth(va, tc.n)
			var want []Piece
			for _, s := range truth {
				want = append(want, Piece{s.Phys, s.Len})
			}
			if fmt.Sprint(sg) != fmt.Sprint(want) {
				why := ""
				switch {
				case len(sg) > len(want):
					why = "\nMore pieces than pages touched: a buffer that ends exactly on a page boundary does not touch the next page."
				case len(sg) > 0 && sg[0].Phys&sacc.PageMask != want[0].Phys&sacc.PageMask:
					why = fmt.Sprintf("\nThe first piece must start at the buffer's offset in its page (%#x), not at the page.", va&sacc.PageMask)
				}
				r.Fatalf("Pin(va %#x, n %#x), %s, returned\n%swant\n%s%s", va, tc.n, tc.what, show(sg), show(want), why)
			}
			if got := r.P.Pinned(); got != len(want) {
				r.Fatalf("After Pin, %d pages of the process are pinned; the buffer touches %d, each pinned once.", got, len(want))
			}
			// Through the machine: the device copies each piece into one kernel buffer.
			dst, err := r.K.AllocPages(tc.n)
			if err != nil {
				t.Fatal(err)
			}
			off := uint64(0)
			for i, p := range sg {
				req := &driver.Request{Opcode: sacc.OpMEMCPY, Src: p.Phys, Dst: dst + off, Length: uint32(p.Len)}
				if err := r.Dev.Do(req); err != nil {
					r.Fatalf("The device could not copy piece %d (%+v): %v", i, p, err)
				}
				off += p.Len
			}
			if got := r.Read(dst, tc.n); !bytes.Equal(got, data) {
				r.Fatalf("The device copied your pieces one after another, and the result is not the buffer the process wrote.")
			}
		})
	}
}

// TestFailureLeavesNothingPinned: a buffer that runs into unmapped memory.
func TestFailureLeavesNothingPinned(t *testing.T) {
	r := sgrig.Up(t)
	va, _ := r.Buffer(0, 2*sacc.PageSize, 0x51)
	// The process keeps a guard page after every mapping: the third page is not mapped.
	sg, err := pin(r, va+0x800, 2*sacc.PageSize)
	if err == nil {
		r.Fatalf("Pin of a buffer whose last page is not mapped returned %d pieces and no error:\n%s", len(sg), show(sg))
	}
	if n := r.P.Pinned(); n != 0 {
		r.Fatalf("Pin failed on the third page (%v), but %d pages are still pinned: unpin the pages pinned so far before returning the error.", err, n)
	}
	if _, err := pin(r, va, 0); err == nil {
		r.Fatalf("Pin of 0 bytes returned no error.")
	}
}
