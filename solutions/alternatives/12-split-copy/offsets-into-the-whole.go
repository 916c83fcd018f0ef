// Exercise 12-split-copy: one copy, many descriptors.
//
// Without an IOMMU a device must be given physical addresses, and a SACC
// descriptor carries one source and one destination. A copy from a scattered
// buffer into another scattered buffer must therefore be cut into
// descriptors, each of which covers a stretch that is contiguous on both
// sides. Write Split.
//
// What you need to know (docs/SPEC.md §6.1, §6.3; chapter 12):
//
//   - a descriptor copies Length bytes from one address to another, and the
//     device accepts a Length of 1 byte to 1 MiB (sacc.MaxLength): any other
//     length fails with status 3;
//   - a descriptor that runs past the end of a destination piece writes into
//     memory that belongs to someone else; one that runs past the end of a
//     source piece reads it;
//   - for example, source pieces of 0x800 and 0x1000 bytes and destination
//     pieces of 0xF00 and 0x900 bytes give three descriptors: 0x800 bytes, then
//     0x700 (the destination's first piece ends), then 0x900.
//
// The contract the tests hold Split to (buffers whose pages are scattered and
// whose offsets differ, and pieces of several MiB):
//
//   - the descriptors are MEMCPYs (req_id and flags left 0) that, run in order,
//     copy the whole source buffer into the destination buffer, byte for byte;
//   - each lies within one source piece and one destination piece and is at
//     most 1 MiB long, and there are as few of them as that allows: a new one
//     starts only where a piece ends, on either side, or where 1 MiB is full;
//   - the two lists must describe the same number of bytes; otherwise Split
//     returns an error. Pieces are never empty.
//
// Edit this file, then run:
//
//	go test ./exercises/12-split-copy/
//	saccbook check 12-split-copy
package splitcopy

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
)

// Piece is one physically contiguous piece of a buffer.
type Piece struct {
	Addr uint64 // physical (DMA) address of its first byte
	Len  uint64 // its length in bytes
}

// Split returns the MEMCPY descriptors that copy the buffer described by src
// into the buffer described by dst, in order.
func Split(src, dst []Piece) ([]sacc.Descriptor, error) {
	var sn, dn uint64
	for _, p := range src {
		sn += p.Len
	}
	for _, p := range dst {
		dn += p.Len
	}
	if sn != dn {
		return nil, fmt.Errorf("split: source has %d bytes, destination %d", sn, dn)
	}
	// Walk the copy by its offset in the whole buffer; find the piece on each
	// side that holds it.
	at := func(list []Piece, off uint64) (addr, left uint64) {
		for _, p := range list {
			if off < p.Len {
				return p.Addr + off, p.Len - off
			}
			off -= p.Len
		}
		return 0, 0
	}
	var out []sacc.Descriptor
	for off := uint64(0); off < sn; {
		s, sl := at(src, off)
		d, dl := at(dst, off)
		n := min(sl, dl, sacc.MaxLength)
		out = append(out, sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: s, Dst: d, Length: uint32(n)})
		off += n
	}
	return out, nil
}
