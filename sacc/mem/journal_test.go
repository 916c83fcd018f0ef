package mem

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestJournalUndoRedo: a copy of a journaled RAM, moved back and forth through the
// journal, holds at each point exactly what the RAM held then, whichever method
// wrote.
func TestJournalUndoRedo(t *testing.T) {
	const size = 16 << 12
	r, err := NewRAM(size)
	if err != nil {
		t.Fatal(err)
	}
	j := new(Journal)
	r.SetJournal(j)
	rng := rand.New(rand.NewPCG(1, 2))
	image := func(r *RAM) []byte {
		b := make([]byte, size)
		r.Read(0, b)
		return b
	}
	var marks []int
	var images [][]byte
	for range 300 {
		marks, images = append(marks, j.Len()), append(images, image(r))
		addr := rng.Uint64N(size - 9000)
		n := 1 + rng.Uint64N(8192)
		switch rng.IntN(5) {
		case 0:
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			r.Write(addr, b)
		case 1:
			r.Fill(addr, n, byte(rng.Uint32()))
		case 2:
			r.Store(addr+uint64(rng.IntN(4096)), 8, rng.Uint64())
		case 3:
			r.Copy(addr, addr+rng.Uint64N(200)-100+200, n)
		case 4:
			r.XOR(addr, n, byte(rng.Uint32()))
		}
	}
	end := j.Len()
	v := r.Clone()
	at := end
	for _, i := range rng.Perm(len(marks)) {
		if marks[i] < at {
			j.Undo(v, marks[i], at)
		} else {
			j.Redo(v, at, marks[i])
		}
		at = marks[i]
		if !bytes.Equal(image(v), images[i]) {
			t.Fatalf("at point %d the copy differs from the RAM then", i)
		}
	}
	j.Redo(v, at, end)
	if !bytes.Equal(image(v), image(r)) {
		t.Fatal("redone to the end, the copy differs from the RAM")
	}
}
