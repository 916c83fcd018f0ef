// Exercise 11-find-the-bug: a driver that stalls, and the trace that says why.
//
// This small driver submits batches and reaps completions by phase. It has one
// bug. It survives a short run, then one day the device goes idle with jobs in
// flight and they never complete. Nobody is going to tell you which line is
// wrong: run the tests, read the trace they print (the last doorbell and what
// the device did after it), and find the rule of the specification the driver
// breaks. Then fix it, with the smallest change that makes the driver right.
//
// The rules the driver must keep (docs/SPEC.md §5.1, §6, §7.1 to §7.4):
//
//   - Submit writes as many of descs as fit into the SQ from q.Tail, rings the
//     doorbell once with the new tail, and returns how many it took, in order;
//     the caller hands the rest over later. The ring takes up to Size − 1 in
//     flight: Submit on an empty ring of 8 takes 7;
//   - Reap hands done every new completion, in ring order, and gives the slots
//     back with one CQ_HEAD write; q.InFlight counts what was handed over and
//     not yet reaped;
//   - every job the driver took runs exactly once and completes.
//
// Edit this file, then run:
//
//	go test ./exercises/11-find-the-bug/
//	saccbook check 11-find-the-bug
package findthebug

import (
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
)

// Registers is the driver's mapping of BAR0 (*kernel.IOMem has this method).
type Registers interface {
	Writel(off uint32, v uint32)
}

// Queue is the driver's view of both rings. Without an IOMMU the CPU addresses
// are the DMA addresses too.
type Queue struct {
	SQ, CQ   uint64 // slot 0 of each ring
	Size     uint32 // entries in each ring
	Tail     uint32 // the next free SQ slot
	Head     uint32 // the next CQ entry to look at
	Phase    uint8  // the phase a new completion carries
	InFlight uint32 // descriptors handed over and not yet reaped
}

// Submit writes as many of descs as fit and rings the doorbell once; it returns
// how many it took.
func (q *Queue) Submit(c *cpu.CPU, regs Registers, descs []sacc.Descriptor) int {
	free := q.Size - 1 - q.InFlight // one slot stays empty: tail == head means empty (§7.3)
	n := min(len(descs), int(free))
	for _, d := range descs[:n] {
		var b [sacc.DescriptorSize]byte
		d.Encode(b[:])
		c.StoreBytes(q.SQ+uint64(q.Tail)*sacc.DescriptorSize, b[:])
		q.Tail = (q.Tail + 1) % q.Size
	}
	q.InFlight += uint32(n)
	if n > 0 {
		regs.Writel(sacc.RegSQTail, q.Tail) // writel: the descriptors are in memory first
	}
	return n
}

// Reap hands done every new completion and gives their slots back; it returns
// how many it took.
func (q *Queue) Reap(c *cpu.CPU, regs Registers, done func(sacc.Completion)) int {
	n := 0
	for n < int(q.Size) {
		slot := q.CQ + uint64(q.Head)*sacc.CompletionSize
		if uint8(c.Load16(slot+sacc.CplPhaseOff)&sacc.CplPhaseBit) != q.Phase {
			break
		}
		c.RMB()
		var b [sacc.CompletionSize]byte
		c.LoadBytes(slot, b[:])
		done(sacc.DecodeCompletion(b[:]))
		n++
		if q.Head++; q.Head == q.Size {
			q.Head, q.Phase = 0, q.Phase^1
		}
	}
	if n > 0 {
		q.InFlight -= uint32(n)
		regs.Writel(sacc.RegCQHead, q.Head)
	}
	return n
}
