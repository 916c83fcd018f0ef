package cpu

import (
	"math/rand/v2"
	"testing"
)

// eachByScan is the cache walk without the set arithmetic: every line of every
// set, in order.
func (c *cache) eachByScan(addr, n uint64, fn func(l *line)) {
	for si := range c.sets {
		for wi := range c.sets[si] {
			l := &c.sets[si][wi]
			if l.valid && l.tag < addr+n && addr < l.tag+lineSize {
				fn(l)
			}
		}
	}
}

// TestEachLooksOnlyWhereAScanWouldFind: the walk over a range's own sets finds the
// lines a scan of the whole cache finds, in the same order (the order the early-load
// history records them in), for ranges of every size and alignment, wrapping past
// the last set or not.
func TestEachLooksOnlyWhereAScanWouldFind(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 13))
	for round := range 200 {
		var c cache
		// Fill the cache from a small window of memory, so that ranges hit lines.
		for range 2000 {
			tag := rng.Uint64N(1024) * lineSize
			if c.find(tag) == nil {
				set := &c.sets[tag/lineSize%numSets]
				set[rng.IntN(numWays)] = line{tag: tag, valid: rng.IntN(8) != 0}
			}
		}
		for range 50 {
			addr := rng.Uint64N(1024 * lineSize)
			n := []uint64{0, 1, 8, 63, 64, 65, 200, rng.Uint64N(64 * lineSize), 63 * lineSize, 64 * lineSize, 70 * lineSize}[rng.IntN(11)]
			var got, want []*line
			c.each(addr, n, func(l *line) { got = append(got, l) })
			c.eachByScan(addr, n, func(l *line) { want = append(want, l) })
			if len(got) != len(want) {
				t.Fatalf("round %d: [%#x, +%#x): %d lines, a scan finds %d", round, addr, n, len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("round %d: [%#x, +%#x): line %d is %#x, a scan has %#x", round, addr, n, i, got[i].tag, want[i].tag)
				}
			}
		}
	}
}
