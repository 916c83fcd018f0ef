// Package mem is the machine's RAM: a sparse array of 4 KiB pages, each allocated the
// first time something writes to it. Untouched RAM reads as zeros (§1).
package mem

import (
	"encoding/binary"
	"fmt"

	"github.com/saccbook/saccbook/sacc"
)

type page = [sacc.PageSize]byte

// MaxRAMSize keeps RAM below the ECAM window, the lowest fixed region of the map.
const MaxRAMSize = sacc.ECAMBase

// RAM is guest-physical memory from address 0 to Size()-1.
type RAM struct {
	size  uint64
	pages []*page
	used  int
	j     *Journal // nil: writes are not kept
}

var zeroPage page

// NewRAM returns RAM of size bytes: a multiple of 4 KiB, at least one page, at most
// MaxRAMSize.
func NewRAM(size uint64) (*RAM, error) {
	if size == 0 || size%sacc.PageSize != 0 || size > MaxRAMSize {
		return nil, fmt.Errorf("RAM size %#x: must be a non-zero multiple of 4 KiB, at most %#x (the ECAM window starts there)", size, uint64(MaxRAMSize))
	}
	return &RAM{size: size, pages: make([]*page, size/sacc.PageSize)}, nil
}

// Size is the RAM size in bytes.
func (r *RAM) Size() uint64 { return r.size }

// PagesTouched counts the pages that have been allocated.
func (r *RAM) PagesTouched() int { return r.used }

// Contains reports whether [addr, addr+n) lies in RAM.
func (r *RAM) Contains(addr, n uint64) bool {
	return addr < r.size && n <= r.size-addr
}

func (r *RAM) readPage(pfn uint64) *page {
	if p := r.pages[pfn]; p != nil {
		return p
	}
	return &zeroPage
}

func (r *RAM) writePage(pfn uint64) *page {
	p := r.pages[pfn]
	if p == nil {
		p = new(page)
		r.pages[pfn] = p
		r.used++
	}
	return p
}

// Read copies RAM at addr into b. The range must lie in RAM (see Contains).
func (r *RAM) Read(addr uint64, b []byte) {
	for len(b) > 0 {
		off := addr & sacc.PageMask
		n := copy(b, r.readPage(addr >> sacc.PageShift)[off:])
		b = b[n:]
		addr += uint64(n)
	}
}

// Write copies b into RAM at addr. The range must lie in RAM.
func (r *RAM) Write(addr uint64, b []byte) {
	if r.j != nil {
		e := r.j.begin(r, addr, uint64(len(b)))
		r.write(addr, b)
		r.j.end(r, e)
		return
	}
	r.write(addr, b)
}

// write is Write without the journal.
func (r *RAM) write(addr uint64, b []byte) {
	// Within one page already written to, the usual case (a descriptor, a
	// completion): one copy, as the loop below would make.
	if off := addr & sacc.PageMask; off+uint64(len(b)) <= sacc.PageSize {
		if p := r.pages[addr>>sacc.PageShift]; p != nil {
			copy(p[off:], b)
			return
		}
	}
	for len(b) > 0 {
		off := addr & sacc.PageMask
		n := copy(r.writePage(addr >> sacc.PageShift)[off:], b)
		b = b[n:]
		addr += uint64(n)
	}
}

// Fill sets n bytes at addr to v. Filling untouched pages with zero allocates nothing.
func (r *RAM) Fill(addr, n uint64, v byte) {
	if r.j != nil {
		e := r.j.begin(r, addr, n)
		r.fill(addr, n, v)
		r.j.end(r, e)
		return
	}
	r.fill(addr, n, v)
}

// fill is Fill without the journal.
func (r *RAM) fill(addr, n uint64, v byte) {
	for n > 0 {
		off := addr & sacc.PageMask
		chunk := min(n, sacc.PageSize-off)
		pfn := addr >> sacc.PageShift
		if v != 0 || r.pages[pfn] != nil {
			p := r.writePage(pfn)
			s := p[off : off+chunk]
			for i := range s {
				s[i] = v
			}
		}
		addr += chunk
		n -= chunk
	}
}

// Load reads a little-endian value of size 1, 2, 4 or 8 bytes at addr.
func (r *RAM) Load(addr uint64, size int) uint64 {
	off := addr & sacc.PageMask
	if off+uint64(size) <= sacc.PageSize {
		p := r.readPage(addr >> sacc.PageShift)
		switch size {
		case 1:
			return uint64(p[off])
		case 2:
			return uint64(binary.LittleEndian.Uint16(p[off:]))
		case 4:
			return uint64(binary.LittleEndian.Uint32(p[off:]))
		case 8:
			return binary.LittleEndian.Uint64(p[off:])
		}
	}
	var b [8]byte
	r.Read(addr, b[:size])
	return binary.LittleEndian.Uint64(b[:])
}

// Store writes a little-endian value of size 1, 2, 4 or 8 bytes at addr.
func (r *RAM) Store(addr uint64, size int, v uint64) {
	if r.j != nil {
		e := r.j.begin(r, addr, uint64(size))
		r.store(addr, size, v)
		r.j.end(r, e)
		return
	}
	r.store(addr, size, v)
}

// store is Store without the journal.
func (r *RAM) store(addr uint64, size int, v uint64) {
	off := addr & sacc.PageMask
	if off+uint64(size) <= sacc.PageSize {
		p := r.writePage(addr >> sacc.PageShift)
		switch size {
		case 1:
			p[off] = byte(v)
			return
		case 2:
			binary.LittleEndian.PutUint16(p[off:], uint16(v))
			return
		case 4:
			binary.LittleEndian.PutUint32(p[off:], uint32(v))
			return
		case 8:
			binary.LittleEndian.PutUint64(p[off:], v)
			return
		}
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	r.write(addr, b[:size])
}

// Copy moves n bytes from src to dst inside RAM, page piece by page piece. If the
// ranges overlap, the result is as if the source were read first (memmove).
func (r *RAM) Copy(dst, src, n uint64) {
	if r.j != nil {
		e := r.j.begin(r, dst, n)
		r.copy(dst, src, n)
		r.j.end(r, e)
		return
	}
	r.copy(dst, src, n)
}

// copy is Copy without the journal.
func (r *RAM) copy(dst, src, n uint64) {
	if dst == src || n == 0 {
		return
	}
	if dst > src && dst < src+n {
		// Overlap with dst above src: copy from the end backwards, a page piece at a time.
		for n > 0 {
			// The piece ends at src+n and dst+n; it must not cross a page in either.
			chunk := min(n, (src+n-1)&sacc.PageMask+1, (dst+n-1)&sacc.PageMask+1)
			s, d := src+n-chunk, dst+n-chunk
			copy(r.writePage(d >> sacc.PageShift)[d&sacc.PageMask:], r.readPage(s >> sacc.PageShift)[s&sacc.PageMask:s&sacc.PageMask+chunk])
			n -= chunk
		}
		return
	}
	for n > 0 {
		chunk := min(n, sacc.PageSize-src&sacc.PageMask, sacc.PageSize-dst&sacc.PageMask)
		copy(r.writePage(dst >> sacc.PageShift)[dst&sacc.PageMask:], r.readPage(src >> sacc.PageShift)[src&sacc.PageMask:src&sacc.PageMask+chunk])
		src += chunk
		dst += chunk
		n -= chunk
	}
}

// XOR XORs n bytes at addr with key, in place.
func (r *RAM) XOR(addr, n uint64, key byte) {
	if r.j != nil {
		e := r.j.begin(r, addr, n)
		r.xorBytes(addr, n, key)
		r.j.end(r, e)
		return
	}
	r.xorBytes(addr, n, key)
}

// xorBytes is XOR without the journal.
func (r *RAM) xorBytes(addr, n uint64, key byte) {
	k8 := uint64(key) * 0x0101010101010101
	for n > 0 {
		off := addr & sacc.PageMask
		chunk := min(n, sacc.PageSize-off)
		s := r.writePage(addr >> sacc.PageShift)[off : off+chunk]
		i := 0
		for ; i+8 <= len(s); i += 8 {
			binary.LittleEndian.PutUint64(s[i:], binary.LittleEndian.Uint64(s[i:])^k8)
		}
		for ; i < len(s); i++ {
			s[i] ^= key
		}
		addr += chunk
		n -= chunk
	}
}
