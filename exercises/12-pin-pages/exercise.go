// Exercise 12-pin-pages: turn a user buffer into its scatterlist.
//
// A buffer that is one range of virtual addresses to a process sits on pages
// that can be anywhere in physical memory (chapter 12). Before a device may
// touch it, the kernel pins every page the buffer touches, so that none of them
// moves, and lists the physical pieces: that list is the scatterlist.
//
//   - the buffer of n bytes at va touches every page from the one holding va to
//     the one holding va + n − 1. A buffer that ends exactly on a page boundary
//     does not touch the next page;
//   - each page gives one piece. The first piece starts at the buffer's offset
//     in its page; the last ends where the buffer ends; the pieces in between
//     are whole pages;
//   - pin(page) pins the page at the page-aligned user address page and returns
//     the physical address of that page (Linux: pin_user_pages). If it fails, the
//     pages already pinned must be released with unpin(phys) before Pin returns
//     the error: a failed call leaves nothing pinned.
//
// Edit this file, then run:
//
//	go test ./exercises/12-pin-pages/
//	saccbook check 12-pin-pages
package pinpages

import (
	"errors"
)

// Piece is one physically contiguous piece of a buffer.
type Piece struct {
	Phys uint64 // physical address of the piece's first byte
	Len  uint64 // its length in bytes
}

// Pin pins the pages of the n bytes at user address va and returns one piece
// per page, in order. n == 0 is an error.
func Pin(pin func(page uint64) (uint64, error), unpin func(phys uint64), va, n uint64) ([]Piece, error) {
	// TODO: for every page the buffer touches: pin it, and append the part of
	// the buffer that lies in it.
	return nil, errors.New("Pin is not written yet: this is your exercise")
}
