package kernel

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/machine"
)

const pg = sacc.PageSize

// newAllocator is a page allocator over ramSize bytes of RAM.
func newAllocator(ramSize uint64) *pageAllocator {
	var a pageAllocator
	a.init(ramSize)
	return &a
}

// checkFreeList asserts the allocator's invariants: free ranges sorted, page
// aligned, non-empty, not touching (fully coalesced), and free + in use = total.
func checkFreeList(t *testing.T, a *pageAllocator, total uint64) {
	t.Helper()
	var free uint64
	for i, r := range a.free {
		if r.size == 0 || r.base%pg != 0 || r.size%pg != 0 {
			t.Fatalf("free[%d] = %+v: empty or not page aligned (%v)", i, r, a.free)
		}
		if i > 0 {
			prev := a.free[i-1]
			if prev.base+prev.size > r.base {
				t.Fatalf("free[%d] %+v overlaps or is out of order with %+v", i, r, prev)
			}
			if prev.base+prev.size == r.base {
				t.Fatalf("free[%d] %+v touches %+v: not coalesced", i, r, prev)
			}
		}
		free += r.size
	}
	if free+a.inUse != total {
		t.Fatalf("free %#x + in use %#x != %#x", free, a.inUse, total)
	}
}

func TestPageAllocatorStartsAboveTheFirstMegabyte(t *testing.T) {
	a := newAllocator(4 << 20)
	if want := []physRange{{reservedLow, 3 << 20}}; !slices.Equal(a.free, want) {
		t.Fatalf("free list %v, want %v", a.free, want)
	}
	if a.inUse != 0 {
		t.Fatalf("in use %#x at start", a.inUse)
	}
}

func TestPageAllocatorFirstFit(t *testing.T) {
	a := newAllocator(4 << 20)
	must := func(n, align uint64) uint64 {
		t.Helper()
		p, err := a.alloc(n, align)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	x := must(pg, pg)
	y := must(2*pg, pg)
	z := must(pg, pg)
	if x != reservedLow || y != reservedLow+pg || z != reservedLow+3*pg {
		t.Fatalf("sequential allocations at %#x %#x %#x, want back to back from %#x", x, y, z, reservedLow)
	}
	a.release(y, 2*pg) // a two-page hole between x and z
	for _, tc := range []struct {
		name string
		n    uint64
		want uint64
	}{
		{"three pages do not fit the hole", 3 * pg, reservedLow + 4*pg},
		{"one page takes the start of the hole", pg, reservedLow + pg},
		{"the next page takes the rest of it", pg, reservedLow + 2*pg},
		{"then the tail again", pg, reservedLow + 7*pg},
	} {
		if got := must(tc.n, pg); got != tc.want {
			t.Fatalf("%s: got %#x, want %#x (free %v)", tc.name, got, tc.want, a.free)
		}
		checkFreeList(t, a, 3<<20)
	}
}

func TestPageAllocatorRoundsToPages(t *testing.T) {
	for _, tc := range []struct {
		n, want uint64
	}{
		{1, pg}, {pg - 1, pg}, {pg, pg}, {pg + 1, 2 * pg}, {3*pg + 5, 4 * pg},
	} {
		a := newAllocator(4 << 20)
		p, err := a.alloc(tc.n, 0)
		if err != nil {
			t.Fatal(err)
		}
		if a.inUse != tc.want {
			t.Errorf("alloc(%#x): in use %#x, want %#x", tc.n, a.inUse, tc.want)
		}
		if a.free[0].base != p+tc.want {
			t.Errorf("alloc(%#x): free list starts at %#x, want %#x", tc.n, a.free[0].base, p+tc.want)
		}
		a.release(p, tc.n)
		if a.inUse != 0 || len(a.free) != 1 {
			t.Errorf("alloc(%#x) then release: in use %#x, free %v", tc.n, a.inUse, a.free)
		}
	}
}

func TestPageAllocatorAlignmentSplitsTheFreeRange(t *testing.T) {
	for _, align := range []uint64{0, 1, 512, pg, 2 * pg, 64 << 10, 1 << 20, 2 << 20} {
		a := newAllocator(8 << 20)
		first, _ := a.alloc(pg, pg) // moves the free range off any large alignment
		p, err := a.alloc(3*pg, align)
		if err != nil {
			t.Fatalf("align %#x: %v", align, err)
		}
		eff := max(align, pg)
		if p%eff != 0 {
			t.Fatalf("align %#x: got %#x", align, p)
		}
		if p < first+pg {
			t.Fatalf("align %#x: %#x overlaps the first allocation at %#x", align, p, first)
		}
		// What lies before the aligned base stays free, and so does what follows.
		var want []physRange
		if p > first+pg {
			want = append(want, physRange{first + pg, p - first - pg})
		}
		want = append(want, physRange{p + 3*pg, 8<<20 - p - 3*pg})
		if !slices.Equal(a.free, want) {
			t.Fatalf("align %#x: free list %v, want %v", align, a.free, want)
		}
		checkFreeList(t, a, 7<<20)
	}
}

func TestPageAllocatorReleaseCoalescesInAnyOrder(t *testing.T) {
	// Four adjacent blocks of different sizes, the last one touching the free tail.
	sizes := []uint64{pg, 2 * pg, pg, 3 * pg}
	perms := permutations([]int{0, 1, 2, 3})
	if len(perms) != 24 {
		t.Fatalf("%d permutations", len(perms))
	}
	for _, order := range perms {
		a := newAllocator(2 << 20)
		var bases []uint64
		for _, n := range sizes {
			p, err := a.alloc(n, pg)
			if err != nil {
				t.Fatal(err)
			}
			bases = append(bases, p)
		}
		for _, i := range order {
			a.release(bases[i], sizes[i])
			checkFreeList(t, a, 1<<20)
		}
		if want := []physRange{{reservedLow, 1 << 20}}; !slices.Equal(a.free, want) || a.inUse != 0 {
			t.Fatalf("order %v: free list %v in use %#x, want %v and 0", order, a.free, a.inUse, want)
		}
	}
}

func TestPageAllocatorReleaseBetweenTwoFreeRanges(t *testing.T) {
	a := newAllocator(2 << 20)
	x, _ := a.alloc(pg, pg)
	y, _ := a.alloc(pg, pg)
	z, _ := a.alloc(pg, pg)
	a.release(x, pg)
	if len(a.free) != 2 {
		t.Fatalf("free list %v, want a hole and the tail", a.free)
	}
	a.release(z, pg) // joins the tail
	if want := []physRange{{x, pg}, {z, 2<<20 - z}}; !slices.Equal(a.free, want) {
		t.Fatalf("free list %v, want %v", a.free, want)
	}
	a.release(y, pg) // joins both neighbours at once
	if want := []physRange{{reservedLow, 1 << 20}}; !slices.Equal(a.free, want) {
		t.Fatalf("free list %v, want %v", a.free, want)
	}
}

func TestPageAllocatorOutOfMemory(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(a *pageAllocator)
		n     uint64
		align uint64
	}{
		{"larger than RAM", func(*pageAllocator) {}, 2 << 20, pg},
		{"exactly one page too many", func(*pageAllocator) {}, 1<<20 + pg, pg},
		{"alignment leaves no room", func(a *pageAllocator) { a.alloc(pg, pg) }, pg, 1 << 20},
		{"fragmented", func(a *pageAllocator) {
			// Every other page taken: half the memory free, no two pages together.
			var held []uint64
			for {
				p, err := a.alloc(pg, pg)
				if err != nil {
					break
				}
				held = append(held, p)
			}
			for i := 0; i < len(held); i += 2 {
				a.release(held[i], pg)
			}
		}, 2 * pg, pg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAllocator(2 << 20)
			tc.setup(a)
			free, inUse := slices.Clone(a.free), a.inUse
			_, err := a.alloc(tc.n, tc.align)
			if err == nil || !strings.Contains(err.Error(), "out of memory") {
				t.Fatalf("alloc(%#x, %#x) = %v, want an out-of-memory error", tc.n, tc.align, err)
			}
			if !slices.Equal(a.free, free) || a.inUse != inUse {
				t.Fatalf("a failed allocation changed the allocator: %v/%#x → %v/%#x", free, inUse, a.free, a.inUse)
			}
		})
	}
}

func TestPageAllocatorTakesTheLastPage(t *testing.T) {
	a := newAllocator(2 << 20)
	p, err := a.alloc(1<<20, pg)
	if err != nil || p != reservedLow {
		t.Fatalf("alloc of all memory = %#x, %v", p, err)
	}
	if len(a.free) != 0 || a.inUse != 1<<20 {
		t.Fatalf("free %v in use %#x", a.free, a.inUse)
	}
	if _, err := a.alloc(pg, pg); err == nil {
		t.Fatal("allocation from an empty allocator succeeded")
	}
	a.release(p, 1<<20)
	checkFreeList(t, a, 1<<20)
}

// TestPageAllocatorRandomSequence runs seeded random allocations and frees,
// checking after every step that no two live allocations overlap, that every
// allocation is aligned and inside RAM, that an allocation only fails when no
// free range could hold it, and at the end that freeing everything (in a random
// order) coalesces the free list back into one range.
func TestPageAllocatorRandomSequence(t *testing.T) {
	const ram = 4 << 20
	const total = ram - reservedLow
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0x5acc))
		a := newAllocator(ram)
		type block struct{ base, size uint64 }
		var live []block
		failures := 0
		for step := range 2000 {
			if len(live) > 0 && rng.IntN(100) < 45 {
				i := rng.IntN(len(live))
				a.release(live[i].base, live[i].size)
				live = append(live[:i], live[i+1:]...)
			} else {
				n := uint64(rng.IntN(16*pg) + 1)
				align := []uint64{0, pg, 2 * pg, 16 * pg, 64 << 10}[rng.IntN(5)]
				p, err := a.alloc(n, align)
				if err != nil {
					failures++
					if fitsSomewhere(a.free, pageRound(n), max(align, pg)) {
						t.Fatalf("seed %d step %d: alloc(%#x, %#x) failed although a free range fits: %v", seed, step, n, align, a.free)
					}
				} else {
					b := block{p, pageRound(n)}
					if p%max(align, pg) != 0 || p < reservedLow || p+b.size > ram {
						t.Fatalf("seed %d step %d: alloc(%#x, %#x) = %#x: misaligned or outside RAM", seed, step, n, align, p)
					}
					for _, o := range live {
						if b.base < o.base+o.size && o.base < b.base+b.size {
							t.Fatalf("seed %d step %d: %+v overlaps live %+v", seed, step, b, o)
						}
					}
					live = append(live, b)
				}
			}
			var inUse uint64
			for _, b := range live {
				inUse += b.size
			}
			if a.inUse != inUse {
				t.Fatalf("seed %d step %d: in use %#x, live blocks hold %#x", seed, step, a.inUse, inUse)
			}
			checkFreeList(t, a, total)
		}
		rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
		for _, b := range live {
			a.release(b.base, b.size)
		}
		if want := []physRange{{reservedLow, total}}; !slices.Equal(a.free, want) || a.inUse != 0 {
			t.Fatalf("seed %d: after freeing everything: free %v in use %#x, want %v", seed, a.free, a.inUse, want)
		}
		if failures == 0 && seed == 1 {
			t.Logf("seed %d never ran out of memory", seed)
		}
	}
}

func fitsSomewhere(free []physRange, n, align uint64) bool {
	for _, r := range free {
		base := (r.base + align - 1) &^ (align - 1)
		if base+n <= r.base+r.size {
			return true
		}
	}
	return false
}

func permutations(xs []int) [][]int {
	if len(xs) <= 1 {
		return [][]int{slices.Clone(xs)}
	}
	var out [][]int
	for i := range xs {
		rest := append(slices.Clone(xs[:i]), xs[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]int{xs[i]}, p...))
		}
	}
	return out
}

// bootBare boots the kernel on a fresh machine without host (which would import
// this package).
func bootBare(t *testing.T, ram uint64, ccfg cpu.Config, kcfg Config) *Kernel {
	t.Helper()
	m, err := machine.New(machine.Config{RAMSize: ram})
	if err != nil {
		t.Fatal(err)
	}
	k, err := Boot(cpu.New(m, ccfg), kcfg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestAllocPagesAccountsMemInUse(t *testing.T) {
	for _, iommu := range []bool{false, true} {
		k := bootBare(t, 16<<20, cpu.Config{}, Config{IOMMU: iommu})
		base := k.MemInUse()
		if iommu && base == 0 {
			t.Fatal("the IOMMU's tables and fault log use no memory")
		}
		if !iommu && base != 0 {
			t.Fatalf("%#x bytes in use after boot without IOMMU", base)
		}
		var held [][2]uint64
		want := base
		for _, n := range []uint64{1, pg, pg + 1, 5 * pg, 100} {
			p, err := k.AllocPages(n)
			if err != nil {
				t.Fatal(err)
			}
			want += pageRound(n)
			if got := k.MemInUse(); got != want {
				t.Fatalf("after AllocPages(%#x): MemInUse %#x, want %#x", n, got, want)
			}
			held = append(held, [2]uint64{p, n})
		}
		for _, h := range held {
			k.FreePages(h[0], h[1])
			want -= pageRound(h[1])
			if got := k.MemInUse(); got != want {
				t.Fatalf("after FreePages(%#x, %#x): MemInUse %#x, want %#x", h[0], h[1], got, want)
			}
		}
		if k.MemInUse() != base {
			t.Fatalf("MemInUse %#x after freeing everything, want %#x", k.MemInUse(), base)
		}
		checkFreeList(t, &k.mm, 15<<20)
	}
}

func TestAllocPagesZeroesMemory(t *testing.T) {
	k := bootBare(t, 16<<20, cpu.Config{}, Config{})
	p, err := k.AllocPages(3 * pg)
	if err != nil {
		t.Fatal(err)
	}
	k.M.RAM().Fill(p, 3*pg, 0xA5) // the previous owner's data
	k.FreePages(p, 3*pg)
	q, err := k.AllocPages(2*pg + 1) // first fit: the same memory again
	if err != nil {
		t.Fatal(err)
	}
	if q != p {
		t.Fatalf("AllocPages returned %#x, want the freed %#x", q, p)
	}
	buf := make([]byte, 3*pg)
	k.M.RAM().Read(q, buf)
	for i, b := range buf {
		if b != 0 {
			t.Fatalf("byte %#x of a fresh allocation is %#x", i, b)
		}
	}
	// The CPU reads the zeros too.
	if v := k.CPU.Load64(q + 2*pg + 8); v != 0 {
		t.Fatalf("CPU reads %#x from fresh memory", v)
	}
}

func TestAllocPagesOutOfMemory(t *testing.T) {
	k := bootBare(t, 4<<20, cpu.Config{}, Config{})
	if _, err := k.AllocPages(4 << 20); err == nil || !strings.Contains(err.Error(), "out of memory") {
		t.Fatalf("AllocPages larger than RAM: %v", err)
	}
	if k.MemInUse() != 0 {
		t.Fatalf("a failed allocation left %#x in use", k.MemInUse())
	}
}
