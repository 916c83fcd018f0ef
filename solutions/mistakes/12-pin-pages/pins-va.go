// Exercise 12-pin-pages: turn a user buffer into its scatterlist.
//
// A buffer that is one range of virtual addresses to a process sits on pages
// that can be anywhere in physical memory. Before a device may touch it, the
// kernel pins every page the buffer touches, so that none of them moves, and
// lists the physical pieces: that list is the scatterlist. Write Pin, the loop
// inside Linux's pin_user_pages and sg_alloc_table_from_pages.
//
// What you need to know (chapter 12; docs/SPEC.md §1, §10 for pages):
//
//   - pages are 4 KiB (sacc.PageSize); an address's page is addr &^ 0xFFF
//     (sacc.PageMask) and its offset in the page addr & 0xFFF;
//   - the buffer of n bytes at va touches every page from the one holding va to
//     the one holding va + n − 1; a buffer that ends exactly on a page boundary
//     does not touch the next page;
//   - pin(page) pins the page at the page-aligned user address page and returns
//     the physical address of that page; it fails for a page the process has
//     not mapped. unpin(phys) releases a page pin returned.
//
// The contract the tests hold Pin to (buffers of every shape: on a page, across
// a boundary, inside one page, one byte):
//
//   - it returns one piece per page the buffer touches, in order: the first
//     starts at the buffer's own offset in its page, the last ends where the
//     buffer ends, those in between are whole pages; a device copying the
//     pieces one after the other reads exactly the buffer;
//   - every page it returns is pinned once, and no other;
//   - if pin fails, Pin returns the error and leaves nothing pinned;
//   - n == 0 is an error.
//
// Edit this file, then run:
//
//	go test ./exercises/12-pin-pages/
//	saccbook check 12-pin-pages
package pinpages

import (
	"errors"

	"github.com/saccbook/saccbook/sacc"
)

// Piece is one physically contiguous piece of a buffer.
type Piece struct {
	Phys uint64 // physical address of the piece's first byte
	Len  uint64 // its length in bytes
}

// Pin pins the pages of the n bytes at user address va and returns one piece
// per page, in order. n == 0 is an error.
func Pin(pin func(page uint64) (uint64, error), unpin func(phys uint64), va, n uint64) ([]Piece, error) {
	if n == 0 {
		return nil, errors.New("pin: empty buffer")
	}
	var out []Piece
	for n > 0 {
		off := va & sacc.PageMask
		phys, err := pin(va)
		if err != nil {
			for _, p := range out {
				unpin(p.Phys &^ uint64(sacc.PageMask))
			}
			return nil, err
		}
		chunk := min(n, sacc.PageSize-off)
		out = append(out, Piece{Phys: phys + off, Len: chunk})
		va, n = va+chunk, n-chunk
	}
	return out, nil
}
