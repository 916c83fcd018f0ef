package dmasync

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 2_000_000

// TestCopiesOnANonCoherentSystem runs three copies through the same two mapped
// buffers on an arm64 CPU whose cache DMA does not snoop. Before each copy the
// CPU has looked at the destination, so its old bytes are in the cache.
func TestCopiesOnANonCoherentSystem(t *testing.T) {
	copies(t, false)
}

// TestCopiesBehindAnIOMMU: the same, with DMA addresses that are not the
// buffers' physical addresses.
func TestCopiesBehindAnIOMMU(t *testing.T) {
	copies(t, true)
}

func copies(t *testing.T, iommu bool) {
	const n = 256
	r := ringrig.Up(t, host.Config{CPU: cpu.Config{Arch: cpu.ARM64, NonCoherent: true}, Kernel: kernel.Config{IOMMU: iommu}}, 8)
	src, err := r.K.AllocPages(n)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := r.K.AllocPages(n)
	if err != nil {
		t.Fatal(err)
	}
	srcDMA, err := r.PDev.DMAMapSingle(src, n, kernel.DMAToDevice)
	if err != nil {
		t.Fatal(err)
	}
	dstDMA, err := r.PDev.DMAMapSingle(dst, n, kernel.DMAFromDevice)
	if err != nil {
		t.Fatal(err)
	}
	rd := ringrig.NewReader()
	runs := 0
	var given [3]uint64
	run := func(s, d uint64, length uint32) error {
		runs++
		given = [3]uint64{s, d, uint64(length)}
		r.Submit(sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: s, Dst: d, Length: length})
		var c sacc.Completion
		if !r.Until(100_000, 200, func() (ok bool) { c, ok = rd.Next(r); return ok }) {
			return fmt.Errorf("the copy did not complete")
		}
		r.Regs.Writel(sacc.RegCQHead, rd.Head)
		if c.Status != sacc.StatusOK {
			return fmt.Errorf("the copy failed with status %v", c.Status)
		}
		return nil
	}
	b := Buffers{Src: src, SrcDMA: srcDMA, Dst: dst, DstDMA: dstDMA}
	for i := range 3 {
		data := bytes.Repeat([]byte{0xA0 + byte(i)}, n)
		_ = r.CPU.Load64(dst) // the CPU looks at dst: the line is cached, holding the old bytes
		var got []byte
		var err error
		before := runs
		mark := r.Mark()
		r.Do(fmt.Sprintf("Copy %d", i+1), budget, func() { got, err = Copy(r.CPU, r.PDev, run, b, data) })
		if err != nil {
			r.Fatalf("Copy %d returned an error: %v\n(run was given src %#x, dst %#x, %d bytes; the DMA addresses are %#x and %#x)",
				i+1, err, given[0], given[1], given[2], srcDMA, dstDMA)
		}
		if runs != before+1 {
			r.Fatalf("Copy %d called run %d times; want once.", i+1, runs-before)
		}
		var inRAM [n]byte
		r.M.RAM().Read(dst, inRAM[:])
		if !bytes.Equal(inRAM[:], data) {
			r.Fatalf("Copy %d: the device copied bytes %#02x, not your %#02x: it reads memory, and your bytes were still in dirty cache lines. "+
				"Clean them before run with dma_sync_single_for_device.", i+1, inRAM[0], data[0])
		}
		if !bytes.Equal(got, data) {
			first := byte(0)
			if len(got) > 0 {
				first = got[0]
			}
			r.Fatalf("Copy %d: the device wrote the right bytes (%#02x) to memory, but Copy returned %d bytes starting %#02x: "+
				"the CPU read its own stale cache line. Invalidate it after run with dma_sync_single_for_cpu.", i+1, data[0], len(got), first)
		}
		// The invalidate belongs after the device's write: a line the CPU (or a
		// prefetcher) brings back in between would be stale again.
		evs := r.Since(mark)
		var lastWrite sim.Time
		for _, w := range check.Find(evs, trace.DMAWrite) {
			if w.Args[1] >= dst && w.Args[1] < dst+n {
				lastWrite = w.Time
			}
		}
		for _, ev := range check.Find(evs, trace.CPUCache) {
			if ev.Args[0] != trace.CacheClean && ev.Args[1] < dst+n && ev.Args[1]+ev.Args[2] > dst && ev.Time < lastWrite {
				r.Fatalf("Copy %d invalidated the destination's cache lines (%s) before the device had written it (t=%d ns). "+
					"Until the device is done, the CPU may bring those lines back into its cache, and they are stale again: "+
					"call dma_sync_single_for_cpu after run returns.", i+1, ev.String(), lastWrite)
			}
		}
	}
}
