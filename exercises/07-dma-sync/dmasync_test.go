package dmasync

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/sim"
)

const budget sim.Time = 2_000_000

// TestCopiesOnANonCoherentSystem runs three copies through the same two mapped
// buffers on an arm64 CPU whose cache DMA does not snoop. Before each copy the
// CPU has looked at the destination, so its old bytes are in the cache.
func TestCopiesOnANonCoherentSystem(t *testing.T) {
	const n = 256
	r := ringrig.Up(t, host.Config{CPU: cpu.Config{Arch: cpu.ARM64, NonCoherent: true}}, 8)
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
	run := func(s, d uint64, length uint32) error {
		runs++
		r.Submit(sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: s, Dst: d, Length: length})
		if !r.Until(100_000, 200, func() bool { _, ok := rd.Next(r); return ok }) {
			return fmt.Errorf("the copy did not complete")
		}
		r.Regs.Writel(sacc.RegCQHead, rd.Head)
		return nil
	}
	b := Buffers{Src: src, SrcDMA: srcDMA, Dst: dst, DstDMA: dstDMA}
	for i := range 3 {
		data := bytes.Repeat([]byte{0xA0 + byte(i)}, n)
		_ = r.CPU.Load64(dst) // the CPU looks at dst: the line is cached, holding the old bytes
		var got []byte
		var err error
		before := runs
		r.Do(fmt.Sprintf("Copy %d", i+1), budget, func() { got, err = Copy(r.CPU, r.PDev, run, b, data) })
		if err != nil {
			r.Fatalf("Copy %d returned an error: %v", i+1, err)
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
	}
}
