// Exercise 07-fewest-barriers: correct on arm64, with as few barriers as that takes.
//
// This little driver was written on an x86 machine and works there: x86 keeps
// stores in program order and never performs a load before an earlier one.
// On arm64 it breaks. Make it correct on arm64, and pay for it as little as
// possible: every barrier stalls the CPU, and a driver does this thousands of
// times a second, so the tests count them.
//
// What you need to know (docs/SPEC.md §7.2, §7.4; chapter 7):
//
//   - on arm64 a store waits in the store buffer and the buffer drains in any
//     order; db.WritelRelaxed (writel_relaxed) waits for nothing. c.WMB() makes
//     every store before it visible before any store after it;
//   - on arm64 a load that follows another load may be performed before it,
//     and then sees memory as it was earlier, unless a read barrier stands
//     between them. c.RMB() orders every load before it against every load
//     after it. c.MB() does both jobs, and costs as much as either;
//   - the device fetches a descriptor as soon as the doorbell tells it of it,
//     and writes a completion's phase last.
//
// The contract the tests hold the driver to (48 jobs through an 8-entry ring,
// on arm64 with five seeds and on x86):
//
//   - the device reads every descriptor as Submit wrote it, and every store into
//     a batch's slots lands before that batch's doorbell (checked in the trace);
//   - Reap hands done every completion once, in order, with the body the device
//     wrote;
//   - Submit uses at most one barrier (wmb, rmb or mb) per call;
//   - Reap uses at most one barrier per call, however many completions it takes,
//     and none when it finds nothing new.
//
// Edit this file, then run:
//
//	go test ./exercises/07-fewest-barriers/
//	saccbook check 07-fewest-barriers
package fewestbarriers

import (
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
)

// Doorbell is the device's BAR0 as relaxed writes (*kernel.IOMem has this
// method): writel_relaxed orders nothing against memory.
type Doorbell interface {
	WritelRelaxed(off uint32, v uint32)
}

// Queue is the driver's view of both rings. Without an IOMMU the CPU addresses
// are the DMA addresses too.
type Queue struct {
	SQ, CQ uint64 // slot 0 of each ring: SQ slot i at SQ + 32*i, CQ entry i at CQ + 16*i
	Size   uint32 // entries in each ring
	Tail   uint32 // the next free SQ slot
	Head   uint32 // the next CQ entry to look at
	Phase  uint8  // the phase a new completion carries: 1 on the first lap
}

// Submit writes descs into the SQ from q.Tail and rings the doorbell once with
// the new tail. The caller keeps fewer than Size descriptors in flight.
func (q *Queue) Submit(c *cpu.CPU, db Doorbell, descs []sacc.Descriptor) {
	if len(descs) == 0 {
		return
	}
	for _, d := range descs {
		var b [sacc.DescriptorSize]byte
		d.Encode(b[:])
		c.StoreBytes(q.SQ+uint64(q.Tail)*sacc.DescriptorSize, b[:])
		q.Tail = (q.Tail + 1) % q.Size
	}
	c.WMB() // one barrier orders every descriptor store before the doorbell
	db.WritelRelaxed(sacc.RegSQTail, q.Tail)
}

// Reap hands done every new completion, in ring order, then gives their slots
// back with one CQ_HEAD write. It returns how many it took.
func (q *Queue) Reap(c *cpu.CPU, db Doorbell, done func(sacc.Completion)) int {
	c.RMB()
	n := 0
	head, phase := q.Head, q.Phase
	for n < int(q.Size) {
		slot := q.CQ + uint64(head)*sacc.CompletionSize
		if uint8(c.Load16(slot+sacc.CplPhaseOff)&sacc.CplPhaseBit) != phase {
			break
		}
		n++
		if head++; head == q.Size {
			head, phase = 0, phase^1
		}
	}
	if n == 0 {
		return 0
	}
	// ...then the bodies.
	for range n {
		var b [sacc.CompletionSize]byte
		c.LoadBytes(q.CQ+uint64(q.Head)*sacc.CompletionSize, b[:])
		done(sacc.DecodeCompletion(b[:]))
		if q.Head++; q.Head == q.Size {
			q.Head, q.Phase = 0, q.Phase^1
		}
	}
	db.WritelRelaxed(sacc.RegCQHead, q.Head)
	return n
}
