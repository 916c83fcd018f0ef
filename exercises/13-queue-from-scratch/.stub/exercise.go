// Exercise 13-queue-from-scratch: a whole queue, from an empty file.
//
// Every exercise so far gave you one part of a driver and did the rest for you.
// This one gives you the types and the signatures, and nothing else: a queue
// pair that brings the device up, takes jobs, hands their completions back and
// shuts down, correct on a weakly ordered CPU and behind an IOMMU. Decide for
// yourself what Queue must hold. Write Open, Submit, Reap and Close.
//
// Everything you need is in docs/SPEC.md (§5 registers, §5.1 doorbells, §6 the
// ring entries, §7.1 to §7.5 the rules of the rings and of enabling, §10 DMA
// addresses) and in the chapters before this one. The pieces: pdev's
// DMAAllocCoherent and DMAFreeCoherent; regs' Readl, Writel, Writeq and
// WritelRelaxed; the CPU's loads, stores, barriers, Now, Delay and Relax.
//
// The contract the tests hold the queue to (an IOMMU on, rings of 8 and 4, on
// x86 and on arm64 with several seeds, streams of copies that wrap the rings
// many times):
//
//   - Open allocates the two rings in coherent DMA memory, programs SQ_BASE,
//     SQ_SIZE, CQ_BASE and CQ_SIZE with their DMA addresses and size, sets
//     ENABLE and returns once the device is READY; it refuses a size that is not
//     a power of two from 2 to 4096 before it allocates or writes anything, and
//     returns an error, leaving nothing allocated, if the device does not become
//     READY within 100 µs;
//   - Submit hands d to the device under a req_id of its own choosing, which it
//     puts in the descriptor in place of d.ReqID and returns; no two requests in
//     flight share one. With Size − 1 requests in flight it returns an error
//     wrapping ErrFull and writes nothing. The descriptor is in memory before
//     the doorbell reaches the device (checked in the trace);
//   - Reap hands done every new completion once, in ring order, with the body
//     the device wrote, gives the slots back, and returns how many it took;
//     every request Submit accepted completes through Reap;
//   - Close stops the device (ENABLE cleared) and frees both rings.
//
// Edit this file, then run:
//
//	go test ./exercises/13-queue-from-scratch/
//	saccbook check 13-queue-from-scratch
package queuefromscratch

import (
	"errors"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// ErrFull is returned, as it is or wrapped, by Submit when the ring can take no
// more.
var ErrFull = errors.New("queue full")

// Queue is one submission queue and its completion queue on a SACC device.
type Queue struct {
}

// Open brings the device up with rings of size entries. regs is BAR0, mapped;
// memory decoding and bus mastering are on.
func Open(c *cpu.CPU, pdev *kernel.PCIDev, regs *kernel.IOMem, size uint32) (*Queue, error) {
	return nil, errors.New("Open is not written yet: this is your exercise")
}

// Submit hands d to the device and returns the req_id it gave it.
func (q *Queue) Submit(d sacc.Descriptor) (uint32, error) {
	return 0, errors.New("Submit is not written yet: this is your exercise")
}

// Reap hands done every new completion and returns how many it took.
func (q *Queue) Reap(done func(sacc.Completion)) int {
	return 0
}

// Close stops the device and frees the rings.
func (q *Queue) Close() {
}
