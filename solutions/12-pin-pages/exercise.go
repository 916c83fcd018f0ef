// Exercise 12-pin-pages: turn a user buffer into its scatterlist.
//
// This is the reference solution; the exercise's file explains the task.
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
		page, off := va&^uint64(sacc.PageMask), va&sacc.PageMask
		phys, err := pin(page)
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
