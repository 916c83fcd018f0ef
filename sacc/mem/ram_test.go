package mem_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/mem"
)

const page = sacc.PageSize

func newRAM(t testing.TB, size uint64) *mem.RAM {
	t.Helper()
	r, err := mem.NewRAM(size)
	if err != nil {
		t.Fatalf("NewRAM(%#x): %v", size, err)
	}
	return r
}

// contents reads all of r.
func contents(r *mem.RAM) []byte {
	b := make([]byte, r.Size())
	r.Read(0, b)
	return b
}

func TestNewRAMRejectsBadSizes(t *testing.T) {
	cases := []struct {
		name string
		size uint64
		ok   bool
	}{
		{"zero", 0, false},
		{"one byte", 1, false},
		{"just under a page", page - 1, false},
		{"just over a page", page + 1, false},
		{"half a page past", 3 * page / 2, false},
		{"one page", page, true},
		{"two pages", 2 * page, true},
		{"default size", sacc.DefaultRAMSize, true},
		{"exactly MaxRAMSize", mem.MaxRAMSize, true},
		{"a page above MaxRAMSize", mem.MaxRAMSize + page, false},
		{"one byte above MaxRAMSize", mem.MaxRAMSize + 1, false},
		{"4 GiB", 1 << 32, false},
		{"all ones", ^uint64(0), false},
		{"largest multiple of 4 KiB", ^uint64(0) &^ sacc.PageMask, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := mem.NewRAM(c.size)
			if c.ok {
				if err != nil || r == nil {
					t.Fatalf("NewRAM(%#x) = %v, %v; want RAM", c.size, r, err)
				}
				if r.Size() != c.size || r.PagesTouched() != 0 {
					t.Errorf("Size %#x, PagesTouched %d; want %#x, 0", r.Size(), r.PagesTouched(), c.size)
				}
				return
			}
			if err == nil || r != nil {
				t.Errorf("NewRAM(%#x) = %v, %v; want an error", c.size, r, err)
			}
		})
	}
}

func TestMaxRAMSizeStopsAtTheECAMWindow(t *testing.T) {
	if mem.MaxRAMSize != sacc.ECAMBase {
		t.Errorf("MaxRAMSize = %#x, want ECAMBase %#x", uint64(mem.MaxRAMSize), uint64(sacc.ECAMBase))
	}
}

func TestContains(t *testing.T) {
	r := newRAM(t, 4*page)
	size := r.Size()
	cases := []struct {
		addr, n uint64
		want    bool
	}{
		{0, 0, true},
		{0, size, true},
		{0, size + 1, false},
		{size - 1, 1, true},
		{size - 1, 2, false},
		{size, 0, false},
		{size, 1, false},
		{page, 2 * page, true},
		{1, ^uint64(0), false}, // addr+n wraps
		{^uint64(0), 2, false},
	}
	for _, c := range cases {
		if got := r.Contains(c.addr, c.n); got != c.want {
			t.Errorf("Contains(%#x, %#x) = %v, want %v", c.addr, c.n, got, c.want)
		}
	}
}

func TestUntouchedRAMReadsZeroAndAllocatesNothing(t *testing.T) {
	r := newRAM(t, sacc.DefaultRAMSize)
	for _, addr := range []uint64{0, 1, page - 1, page - 4, 5*page - 3, r.Size() - 8} {
		for _, size := range []int{1, 2, 4, 8} {
			if v := r.Load(addr, size); v != 0 {
				t.Errorf("Load(%#x, %d) = %#x on untouched RAM", addr, size, v)
			}
		}
	}
	b := bytes.Repeat([]byte{0xAA}, 3*page+17)
	r.Read(page-9, b)
	if !bytes.Equal(b, make([]byte, len(b))) {
		t.Error("Read of untouched RAM returned non-zero bytes")
	}
	if n := r.PagesTouched(); n != 0 {
		t.Errorf("reads touched %d pages", n)
	}
}

func TestLoadStoreLittleEndian(t *testing.T) {
	const size = 4 * page
	cases := []struct {
		name  string
		addr  uint64
		size  int
		v     uint64
		pages int // pages the store touches
	}{
		{"byte", 0x10, 1, 0xAB, 1},
		{"byte truncates", 0x10, 1, 0x1234, 1},
		{"word aligned", 0x20, 2, 0xBEEF, 1},
		{"word truncates", 0x20, 2, 0x12_BEEF, 1},
		{"dword aligned", 0x40, 4, 0xDEAD_BEEF, 1},
		{"qword aligned", 0x80, 8, 0x0102_0304_0506_0708, 1},
		{"word unaligned", 0x101, 2, 0xCAFE, 1},
		{"dword unaligned", 0x203, 4, 0x1122_3344, 1},
		{"qword unaligned", 0x305, 8, 0x8877_6655_4433_2211, 1},
		{"byte at the last byte of a page", page - 1, 1, 0x5A, 1},
		{"word ending at a page end", page - 2, 2, 0xA55A, 1},
		{"qword ending at a page end", page - 8, 8, 0xFFEE_DDCC_BBAA_9988, 1},
		{"word across a page", page - 1, 2, 0xA1B2, 2},
		{"dword across a page, 1+3", page - 1, 4, 0xA1B2_C3D4, 2},
		{"dword across a page, 2+2", 2*page - 2, 4, 0xA1B2_C3D4, 2},
		{"dword across a page, 3+1", 2*page - 3, 4, 0xA1B2_C3D4, 2},
		{"qword across a page, 1+7", 3*page - 1, 8, 0x0123_4567_89AB_CDEF, 2},
		{"qword across a page, 4+4", page - 4, 8, 0x0123_4567_89AB_CDEF, 2},
		{"qword across a page, 7+1", page - 7, 8, 0x0123_4567_89AB_CDEF, 2},
		{"qword at the end of RAM", size - 8, 8, ^uint64(0), 1},
		{"byte at the end of RAM", size - 1, 1, 0xFF, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRAM(t, size)
			r.Store(c.addr, c.size, c.v)
			mask := ^uint64(0) >> (64 - 8*c.size)
			if got := r.Load(c.addr, c.size); got != c.v&mask {
				t.Errorf("Load after Store = %#x, want %#x", got, c.v&mask)
			}
			var le [8]byte
			binary.LittleEndian.PutUint64(le[:], c.v)
			got := make([]byte, c.size+2)
			lo := c.addr - 1
			if c.addr == 0 {
				lo = 0
			}
			r.Read(lo, got[:min(uint64(len(got)), size-lo)])
			want := append([]byte{0}, le[:c.size]...)
			if !bytes.Equal(got[:len(want)], want) {
				t.Errorf("bytes at %#x = % x, want % x (little-endian, neighbours untouched)", lo, got[:len(want)], want)
			}
			if r.PagesTouched() != c.pages {
				t.Errorf("PagesTouched = %d, want %d", r.PagesTouched(), c.pages)
			}
			// Every narrower load at the same address sees the low bytes.
			for _, s := range []int{1, 2, 4, 8} {
				if s > c.size {
					break
				}
				m := ^uint64(0) >> (64 - 8*s)
				if got := r.Load(c.addr, s); got != c.v&m {
					t.Errorf("Load(%#x, %d) = %#x, want %#x", c.addr, s, got, c.v&m)
				}
			}
		})
	}
}

func TestLoadSeesBytesWrittenByWrite(t *testing.T) {
	r := newRAM(t, 2*page)
	b := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}
	for _, addr := range []uint64{0, 3, page - 4, page - 1} {
		r.Write(addr, b)
		for _, size := range []int{1, 2, 4, 8} {
			want := binary.LittleEndian.Uint64(append(b[:size:size], make([]byte, 8)...)[:8])
			if got := r.Load(addr, size); got != want {
				t.Errorf("Load(%#x, %d) = %#x, want %#x", addr, size, got, want)
			}
		}
	}
}

func TestReadWriteAcrossPages(t *testing.T) {
	const size = 8 * page
	cases := []struct {
		name    string
		addr, n uint64
		pages   int
	}{
		{"empty", 100, 0, 0},
		{"inside one page", 100, 200, 1},
		{"a whole page", page, page, 1},
		{"straddling two pages", page - 3, 7, 2},
		{"exactly two pages from an unaligned start", page + 1, 2 * page, 3},
		{"across several pages", page - 50, 3*page + 100, 5},
		{"all of RAM", 0, size, 8},
		{"to the end of RAM", size - page - 1, page + 1, 2},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRAM(t, size)
			ref := make([]byte, size)
			data := make([]byte, c.n)
			for i := range data {
				data[i] = byte(rng.UintN(255) + 1) // never zero, so a missed byte shows
			}
			r.Write(c.addr, data)
			copy(ref[c.addr:], data)
			if got := contents(r); !bytes.Equal(got, ref) {
				t.Errorf("RAM differs from the reference after Write(%#x, %d bytes)", c.addr, c.n)
			}
			back := make([]byte, c.n)
			r.Read(c.addr, back)
			if !bytes.Equal(back, data) {
				t.Errorf("Read did not return what Write stored")
			}
			if r.PagesTouched() != c.pages {
				t.Errorf("PagesTouched = %d, want %d", r.PagesTouched(), c.pages)
			}
		})
	}
}

func TestFill(t *testing.T) {
	const size = 8 * page
	cases := []struct {
		name    string
		touch   []uint64 // addresses written (one byte of 0xEE) first
		addr, n uint64
		v       byte
		pages   int // touched afterwards
	}{
		{"zero on untouched RAM allocates nothing", nil, page - 7, 4 * page, 0, 0},
		{"zero on all of untouched RAM", nil, 0, size, 0, 0},
		{"zero on a touched page clears it, others stay untouched", []uint64{2*page + 5}, page, 3 * page, 0, 1},
		{"zero over a partly touched range", []uint64{page - 1, 3 * page}, page - 10, 2*page + 20, 0, 2},
		{"non-zero inside a page", nil, 10, 100, 0x5A, 1},
		{"non-zero across pages", nil, page - 1, 2*page + 2, 0xFF, 4},
		{"non-zero on touched pages", []uint64{0, page}, 0, 2 * page, 0x11, 2},
		{"non-zero, empty", nil, 100, 0, 0x11, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRAM(t, size)
			ref := make([]byte, size)
			for _, a := range c.touch {
				r.Store(a, 1, 0xEE)
				ref[a] = 0xEE
			}
			r.Fill(c.addr, c.n, c.v)
			for i := c.addr; i < c.addr+c.n; i++ {
				ref[i] = c.v
			}
			if got := contents(r); !bytes.Equal(got, ref) {
				i := 0
				for got[i] == ref[i] {
					i++
				}
				t.Errorf("after Fill: byte %#x = %#x, want %#x", i, got[i], ref[i])
			}
			if r.PagesTouched() != c.pages {
				t.Errorf("PagesTouched = %d, want %d", r.PagesTouched(), c.pages)
			}
		})
	}
}

// memmove is the reference: what Copy must do on a plain byte slice.
func memmove(b []byte, dst, src, n uint64) {
	tmp := make([]byte, n)
	copy(tmp, b[src:src+n])
	copy(b[dst:], tmp)
}

// pattern fills RAM and its reference with distinct non-zero bytes, except for the
// pages listed in untouched, which stay unallocated (and read as zero).
func pattern(r *mem.RAM, ref []byte, untouched ...uint64) {
	skip := map[uint64]bool{}
	for _, p := range untouched {
		skip[p] = true
	}
	for i := range ref {
		if skip[uint64(i)/page] {
			ref[i] = 0
			continue
		}
		ref[i] = byte(i*7+i/page*13) | 1
	}
	for p := uint64(0); p < uint64(len(ref))/page; p++ {
		if !skip[p] {
			r.Write(p*page, ref[p*page:(p+1)*page])
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func TestCopyNamedCases(t *testing.T) {
	const size = 16 * page
	cases := []struct {
		name         string
		dst, src, n  uint64
		untouchedPgs []uint64
	}{
		{"nothing to copy", 0x100, 0x200, 0, nil},
		{"src equals dst", 0x1234, 0x1234, 3 * page, nil},
		{"disjoint, one page", 5 * page, page, page, nil},
		{"disjoint, unaligned, several pages", 9*page + 123, page + 4000, 4*page + 77, nil},
		{"adjacent, dst right after src", 2*page + 100, 2*page - 100, 200, nil},
		{"adjacent, src right after dst", 2*page - 100, 2*page + 100, 200, nil},
		{"overlap, dst above src, within one page", page + 0x20, page + 0x10, 0x100, nil},
		{"overlap, dst below src, within one page", page + 0x10, page + 0x20, 0x100, nil},
		{"overlap by one byte, dst above", page + 99, page, 100, nil},
		{"overlap by one byte, dst below", page, page + 99, 100, nil},
		{"shift up by one across pages", page - 5, page - 6, 3 * page, nil},
		{"shift down by one across pages", page - 6, page - 5, 3 * page, nil},
		{"dst above src by a page, page aligned", 3 * page, 2 * page, 4 * page, nil},
		{"dst below src by a page, page aligned", 2 * page, 3 * page, 4 * page, nil},
		{"dst above, different page offsets", 4*page + 3000, 2*page + 100, 5*page + 1, nil},
		{"dst below, different page offsets", 2*page + 100, 4*page + 3000, 5*page + 1, nil},
		{"source page untouched", 8 * page, 2 * page, 2 * page, []uint64{2, 3}},
		{"overlap with untouched pages", 3*page + 10, 2*page + 5, 3 * page, []uint64{3, 4}},
		{"to the end of RAM", size - 2*page, size - 3*page - 1, 2 * page, nil},
		{"all of RAM but one byte, up", 1, 0, size - 1, nil},
		{"all of RAM but one byte, down", 0, 1, size - 1, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRAM(t, size)
			ref := make([]byte, size)
			pattern(r, ref, c.untouchedPgs...)
			r.Copy(c.dst, c.src, c.n)
			memmove(ref, c.dst, c.src, c.n)
			if got := contents(r); !bytes.Equal(got, ref) {
				i := firstDiff(got, ref)
				t.Errorf("Copy(%#x, %#x, %#x): byte %#x = %#x, want %#x", c.dst, c.src, c.n, i, got[i], ref[i])
			}
		})
	}
}

func TestCopyMatchesMemmove(t *testing.T) {
	const size = 24 * page
	rng := rand.New(rand.NewPCG(0x5ACC, 42))
	r := newRAM(t, size)
	ref := make([]byte, size)
	pattern(r, ref, 1, 7, 8, 20) // some pages stay untouched until something lands there
	iterations := 3000
	if testing.Short() {
		iterations = 300
	}
	for i := range iterations {
		var n uint64
		switch rng.IntN(4) {
		case 0:
			n = rng.Uint64N(17) // tiny, including 0
		case 1:
			n = rng.Uint64N(page + 1) // up to a page
		case 2:
			n = rng.Uint64N(6*page) + 1 // several pages
		case 3:
			n = uint64(rng.IntN(4)+1) * page // whole pages
		}
		src := rng.Uint64N(size - n + 1)
		var dst uint64
		switch rng.IntN(3) {
		case 0: // anywhere
			dst = rng.Uint64N(size - n + 1)
		case 1: // overlapping, nearby: a small shift either way
			d := rng.Uint64N(64) + 1
			if rng.IntN(2) == 0 && src+d+n <= size {
				dst = src + d
			} else if src >= d {
				dst = src - d
			} else {
				dst = src + d
			}
		case 2: // overlapping by a random amount up to n, either way
			d := rng.Uint64N(n + 1)
			if rng.IntN(2) == 0 && src+d+n <= size {
				dst = src + d
			} else if src >= d {
				dst = src - d
			} else {
				dst = src
			}
		}
		if dst+n > size {
			dst = size - n
		}
		r.Copy(dst, src, n)
		memmove(ref, dst, src, n)
		if got := contents(r); !bytes.Equal(got, ref) {
			j := firstDiff(got, ref)
			t.Fatalf("iteration %d: Copy(dst %#x, src %#x, n %#x): byte %#x = %#x, want %#x", i, dst, src, n, j, got[j], ref[j])
		}
		// Scramble a little so later copies do not just move equal bytes around.
		if i%16 == 0 {
			a := rng.Uint64N(size - 64)
			for k := range uint64(64) {
				v := byte(rng.Uint32())
				r.Store(a+k, 1, uint64(v))
				ref[a+k] = v
			}
		}
	}
}

func TestXORMatchesAByteLoop(t *testing.T) {
	const size = 6 * page
	type xorCase struct {
		addr, n uint64
		key     byte
	}
	cases := []xorCase{
		{0, 0, 0x17},
		{0, page, sacc.XFORMKey},
		{0, 2 * page, 0xFF},
		{page - 1, 2, 0x80},
		{3, 5 * page, sacc.XFORMKey},
		{size - 9, 9, 0x01},
		{page, page, 0},
	}
	// Every start offset 0–8 and length 0–17 around a page boundary and at the start.
	for _, base := range []uint64{0, page - 9} {
		for off := range uint64(9) {
			for n := range uint64(18) {
				cases = append(cases, xorCase{base + off, n, byte(0x30 + off + n)})
			}
		}
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("addr=%#x,n=%d,key=%#x", c.addr, c.n, c.key), func(t *testing.T) {
			r := newRAM(t, size)
			ref := make([]byte, size)
			pattern(r, ref, 4) // page 4 untouched
			r.XOR(c.addr, c.n, c.key)
			for i := c.addr; i < c.addr+c.n; i++ {
				ref[i] ^= c.key
			}
			if got := contents(r); !bytes.Equal(got, ref) {
				i := firstDiff(got, ref)
				t.Errorf("byte %#x = %#x, want %#x", i, got[i], ref[i])
			}
		})
	}
}

func TestXORTwiceRestores(t *testing.T) {
	r := newRAM(t, 4*page)
	ref := make([]byte, 4*page)
	pattern(r, ref)
	r.XOR(5, 3*page+7, sacc.XFORMKey)
	r.XOR(5, 3*page+7, sacc.XFORMKey)
	if !bytes.Equal(contents(r), ref) {
		t.Error("XOR applied twice did not restore the bytes")
	}
}

func BenchmarkCopy64K(b *testing.B) {
	const n = 64 << 10
	r := newRAM(b, 1<<20)
	r.Fill(0, 1<<20, 0x5A) // every page present: measure copying, not allocation
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		r.Copy(0x80000, 0x10000, n)
	}
}
