// Exercise 12-split-copy: one copy, many descriptors.
//
// Without an IOMMU a device must be given physical addresses, and a SACC
// descriptor carries one source and one destination (chapter 12). A copy from a
// scattered buffer into another scattered buffer must therefore be cut into
// descriptors, each of which covers a stretch that is contiguous on both sides:
// a descriptor ends wherever a source piece ends or a destination piece ends,
// whichever comes first.
//
// For example, source pieces of 0x800 and 0x1000 bytes and destination pieces
// of 0xF00 and 0x900 bytes give three descriptors: 0x800 bytes, then 0x700 (the
// destination's first piece ends), then 0x900.
//
// A descriptor that runs past the end of a destination piece writes into a page
// that belongs to someone else.
//
// Edit this file, then run:
//
//	go test ./exercises/12-split-copy/
//	saccbook check 12-split-copy
package splitcopy

import (
	"errors"

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
	// TODO: walk both lists at once.
	return nil, errors.New("Split is not written yet: this is your exercise")
}
