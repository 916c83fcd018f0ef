package mem

// A Journal keeps every change made to a RAM while it is attached: for each write,
// the bytes it covered before and after. With it another RAM that was a copy of the
// journaled one can be moved to the contents at any earlier or later point of the
// journal without running anything again, by putting the old bytes back in reverse
// order (Undo) or the new bytes in order (Redo). A point is a length of the journal
// (Len).
type Journal struct {
	entries []journalEntry
	// data holds each entry's bytes: n old bytes, then n new ones.
	data []byte
}

type journalEntry struct {
	addr, n uint64
	off     uint64 // where the entry's bytes start in data
}

// SetJournal attaches j (nil: none): every later write to r is kept in it.
func (r *RAM) SetJournal(j *Journal) { r.j = j }

// Len is the number of writes kept so far: a point of the journal.
func (j *Journal) Len() int { return len(j.entries) }

// Bytes is how much memory the kept contents take.
func (j *Journal) Bytes() int { return len(j.data) }

// Reset forgets everything kept.
func (j *Journal) Reset() {
	j.entries = j.entries[:0]
	j.data = j.data[:0]
}

// begin keeps the old contents of [addr, addr+n) before r writes there.
func (j *Journal) begin(r *RAM, addr, n uint64) int {
	off := uint64(len(j.data))
	j.data = append(j.data, make([]byte, 2*n)...)
	r.Read(addr, j.data[off:off+n])
	j.entries = append(j.entries, journalEntry{addr: addr, n: n, off: off})
	return len(j.entries) - 1
}

// end keeps the new contents once the write is done.
func (j *Journal) end(r *RAM, i int) {
	e := j.entries[i]
	r.Read(e.addr, j.data[e.off+e.n:e.off+2*e.n])
}

// Undo takes dst from point to back to point from (from ≤ to): the old bytes of
// those writes, last first. dst must not itself be journaled into j.
func (j *Journal) Undo(dst *RAM, from, to int) {
	for i := to - 1; i >= from; i-- {
		e := j.entries[i]
		dst.Write(e.addr, j.data[e.off:e.off+e.n])
	}
}

// Redo takes dst from point from forward to point to (from ≤ to): the new bytes of
// those writes, first first.
func (j *Journal) Redo(dst *RAM, from, to int) {
	for i := from; i < to; i++ {
		e := j.entries[i]
		dst.Write(e.addr, j.data[e.off+e.n:e.off+2*e.n])
	}
}

// Clone returns a copy of r with its own pages and no journal.
func (r *RAM) Clone() *RAM {
	c := &RAM{size: r.size, pages: make([]*page, len(r.pages)), used: r.used}
	for i, p := range r.pages {
		if p != nil {
			q := *p
			c.pages[i] = &q
		}
	}
	return c
}
