// Exercise 12-split-copy: one copy, many descriptors.
//
// This is the reference solution; the exercise's file explains the task.
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

// Split returns the MEMCPY descriptors (Opcode sacc.OpMEMCPY; req_id and flags
// left 0) that copy the buffer described by src into the buffer described by
// dst, in order, one for each stretch that is contiguous in both. The two lists
// must describe the same number of bytes; otherwise Split returns an error.
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
	var out []sacc.Descriptor
	si, di := 0, 0
	var so, do uint64 // how far into the current pieces
	for si < len(src) && di < len(dst) {
		n := min(src[si].Len-so, dst[di].Len-do, sacc.MaxLength)
		if n > 0 {
			out = append(out, sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: src[si].Addr + so, Dst: dst[di].Addr + do, Length: uint32(n)})
		}
		if so += n; so == src[si].Len {
			si, so = si+1, 0
		}
		if do += n; do == dst[di].Len {
			di, do = di+1, 0
		}
	}
	return out, nil
}
