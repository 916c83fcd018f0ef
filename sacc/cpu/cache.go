package cpu

import (
	"encoding/binary"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
)

const (
	lineSize = 64
	numSets  = 64
	numWays  = 8 // 64 sets × 8 ways × 64 B = 32 KiB, an L1 data cache
)

type span struct{ lo, hi uint64 }

type line struct {
	tag          uint64 // line address
	valid, dirty bool
	used         uint64 // LRU stamp
	data         [lineSize]byte
}

// cache is the CPU's data cache. Coherent, it only decides what a load costs: DMA
// writes invalidate the lines they touch, and the data always comes from memory.
// Non-coherent, it holds data: stores stay in dirty lines the device cannot see and
// loads return lines that DMA does not update.
type cache struct {
	nonCoherent bool
	sets        [numSets][numWays]line
	tick        uint64
	uncached    []span

	// keepHistory records what a line held when a DMA write invalidated it, so
	// that a load performed early (arm64, no rmb) can return the older value.
	keepHistory bool
	history     [16]staleLine
	histNext    int
}

// staleLine is a line's contents just before a DMA write at time at replaced them.
type staleLine struct {
	tag  uint64
	at   sim.Time
	data [lineSize]byte
}

func (c *cache) init(nonCoherent bool) { c.nonCoherent = nonCoherent }

func (c *cache) isUncached(addr uint64) bool {
	if len(c.uncached) == 0 {
		return false // coherent systems map nothing uncached
	}
	for _, s := range c.uncached {
		if addr >= s.lo && addr < s.hi {
			return true
		}
	}
	return false
}

func (c *cache) find(tag uint64) *line {
	set := &c.sets[tag/lineSize%numSets]
	for i := range set {
		if set[i].valid && set[i].tag == tag {
			c.tick++
			set[i].used = c.tick
			return &set[i]
		}
	}
	return nil
}

// fill brings a line in, evicting (and writing back) the least recently used.
func (c *cache) fill(m *machine.Machine, tag uint64) *line {
	set := &c.sets[tag/lineSize%numSets]
	victim := &set[0]
	for i := range set {
		if !set[i].valid {
			victim = &set[i]
			break
		}
		if set[i].used < victim.used {
			victim = &set[i]
		}
	}
	if victim.valid && victim.dirty {
		m.WriteBytes(victim.tag, victim.data[:])
	}
	c.tick++
	*victim = line{tag: tag, valid: true, used: c.tick}
	if c.nonCoherent {
		m.ReadBytes(tag, victim.data[:])
	} else if c.keepHistory {
		m.RAM().Read(tag, victim.data[:]) // the copy an early load may need
	}
	return victim
}

// load reads a value; miss says whether it had to go to memory.
func (c *cache) load(m *machine.Machine, addr uint64, size int) (uint64, bool) {
	tag := addr &^ (lineSize - 1)
	if c.isUncached(addr) || addr+uint64(size)-1 >= tag+lineSize {
		return m.Read(addr, size), true // uncached, or split across lines
	}
	l := c.find(tag)
	if !c.nonCoherent {
		if l != nil {
			return m.RAM().Load(addr, size), false
		}
		c.fill(m, tag)
		return m.Read(addr, size), true
	}
	miss := l == nil
	if miss {
		l = c.fill(m, tag)
	}
	var b [8]byte
	copy(b[:size], l.data[addr-tag:])
	return binary.LittleEndian.Uint64(b[:]), miss
}

// store makes a drained store part of memory (coherent) or of a dirty line.
func (c *cache) store(m *machine.Machine, addr uint64, size int, v uint64) {
	tag := addr &^ (lineSize - 1)
	if !c.nonCoherent || c.isUncached(addr) || addr+uint64(size)-1 >= tag+lineSize {
		m.Write(addr, size, v)
		if l := c.find(tag); l != nil {
			if c.nonCoherent {
				l.valid = false // keep the line from shadowing what was just written
			} else if c.keepHistory && addr+uint64(size) <= tag+lineSize {
				var b [8]byte
				binary.LittleEndian.PutUint64(b[:], v)
				copy(l.data[addr-tag:], b[:size]) // write-through keeps the copy current
			}
		}
		return
	}
	l := c.find(tag)
	if l == nil {
		l = c.fill(m, tag)
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	copy(l.data[addr-tag:], b[:size])
	l.dirty = true
	// Nothing reaches memory, so no cpu_write: say where the store went.
	m.Tracer().EmitCPUStoreCached(addr, uint64(size), v)
}

// each calls fn for every valid line overlapping [addr, addr+n), in the order of
// a scan of the whole cache (set by set, way by way). A line can only sit in the
// set its address maps to, so a range shorter than the cache looks only at its
// own sets, one candidate tag in each: a DMA snoop costs the lines it covers,
// not the 512 of the cache.
func (c *cache) each(addr, n uint64, fn func(l *line)) {
	first, last := addr&^(lineSize-1), (addr+n-1)&^(lineSize-1)
	if n == 0 || (last-first)/lineSize+1 >= numSets {
		// An empty range (which the scan below matches to the line around addr
		// when addr is not aligned), or every set.
		for si := range c.sets {
			for wi := range c.sets[si] {
				l := &c.sets[si][wi]
				if l.valid && l.tag < addr+n && addr < l.tag+lineSize {
					fn(l)
				}
			}
		}
		return
	}
	// Fewer lines than sets: each set holds at most one of them, and the lines
	// from first occupy the sets from firstSet on. In set order, the range's last
	// lines come first when it wraps past the last set.
	lines, firstSet := (last-first)/lineSize+1, first/lineSize%numSets
	wrapped := max(firstSet+lines, numSets) - numSets
	for si := range wrapped {
		c.eachInSet(si, first+(numSets-firstSet+si)*lineSize, fn)
	}
	for si := firstSet; si < min(firstSet+lines, numSets); si++ {
		c.eachInSet(si, first+(si-firstSet)*lineSize, fn)
	}
}

// eachInSet calls fn for the line of set si with tag, if it is valid.
func (c *cache) eachInSet(si, tag uint64, fn func(l *line)) {
	set := &c.sets[si]
	for wi := range set {
		if set[wi].valid && set[wi].tag == tag {
			fn(&set[wi])
		}
	}
}

// drop forgets lines (a coherent snoop after a DMA write at time now), keeping
// what they held for early loads when the history is on.
func (c *cache) drop(addr, n uint64, now sim.Time) {
	c.each(addr, n, func(l *line) {
		if c.keepHistory {
			c.history[c.histNext] = staleLine{tag: l.tag, at: now, data: l.data}
			c.histNext = (c.histNext + 1) % len(c.history)
		}
		l.valid = false
	})
}

// earlier returns the bytes [addr, addr+size) as they were at time t, if a DMA
// write since then replaced them and the history still has the line.
func (c *cache) earlier(addr uint64, size int, t sim.Time) (uint64, bool) {
	tag := addr &^ (lineSize - 1)
	best := -1
	for i, h := range c.history {
		if h.tag == tag && h.at > t && (best < 0 || h.at < c.history[best].at) {
			best = i
		}
	}
	if best < 0 || addr+uint64(size) > tag+lineSize {
		return 0, false
	}
	var b [8]byte
	copy(b[:size], c.history[best].data[addr-tag:])
	return binary.LittleEndian.Uint64(b[:]), true
}

// clean writes dirty lines back and returns how many it wrote.
func (c *cache) clean(m *machine.Machine, addr, n uint64) int {
	count := 0
	c.each(addr, n, func(l *line) {
		if l.dirty {
			m.WriteBytes(l.tag, l.data[:])
			l.dirty = false
			count++
		}
	})
	return count
}

// invalidate drops lines, dirty or not, and returns how many it dropped.
func (c *cache) invalidate(addr, n uint64) int {
	count := 0
	c.each(addr, n, func(l *line) {
		l.valid, l.dirty = false, false
		count++
	})
	return count
}
