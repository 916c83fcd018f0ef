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
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// ErrFull is returned, as it is or wrapped, by Submit when the ring can take no
// more.
var ErrFull = errors.New("queue full")

// Queue is one submission queue and its completion queue on a SACC device.
type Queue struct {
	c    *cpu.CPU
	pdev *kernel.PCIDev
	regs *kernel.IOMem
	size uint32

	sqCPU, sqDMA uint64
	cqCPU, cqDMA uint64

	tail, head uint32
	phase      uint8
	inFlight   uint32
	nextID     uint32
}

// readyTimeout is how long Open waits for READY.
const readyTimeout = 100_000

// Open brings the device up with rings of size entries. regs is BAR0, mapped;
// memory decoding and bus mastering are on.
func Open(c *cpu.CPU, pdev *kernel.PCIDev, regs *kernel.IOMem, size uint32) (*Queue, error) {
	if size < sacc.MinRingSize || size > sacc.MaxRingSize || !sacc.IsPowerOfTwo(uint64(size)) {
		return nil, fmt.Errorf("ring size %d: want a power of two from %d to %d", size, sacc.MinRingSize, sacc.MaxRingSize)
	}
	q := &Queue{c: c, pdev: pdev, regs: regs, size: size, phase: 1}
	var err error
	if q.sqCPU, q.sqDMA, err = pdev.DMAAllocCoherent(q.sqBytes()); err != nil {
		return nil, fmt.Errorf("allocate the SQ: %w", err)
	}
	if q.cqCPU, q.cqDMA, err = pdev.DMAAllocCoherent(q.cqBytes()); err != nil {
		pdev.DMAFreeCoherent(q.sqBytes(), q.sqCPU, q.sqDMA)
		return nil, fmt.Errorf("allocate the CQ: %w", err)
	}
	// §5: the ring registers first, while ENABLE is still 0.
	regs.Writeq(sacc.RegSQBaseLo, q.sqDMA)
	regs.Writel(sacc.RegSQSize, size)
	regs.Writeq(sacc.RegCQBaseLo, q.cqDMA)
	regs.Writel(sacc.RegCQSize, size)
	regs.Writel(sacc.RegCTRL, sacc.CtrlEnable)
	deadline := c.Now() + readyTimeout
	for {
		st := regs.Readl(sacc.RegSTATUS)
		switch {
		case st&sacc.StatusReady != 0:
			return q, nil
		case st&sacc.StatusError != 0:
			err = fmt.Errorf("ENABLE refused: ERR_CODE %d", regs.Readl(sacc.RegErrCode))
		case c.Now() >= deadline:
			err = fmt.Errorf("not READY %d ns after ENABLE", readyTimeout)
		}
		if err != nil {
			q.Close()
			return nil, err
		}
		c.Delay(500)
	}
}

func (q *Queue) sqBytes() uint64 { return uint64(q.size) * sacc.DescriptorSize }
func (q *Queue) cqBytes() uint64 { return uint64(q.size) * sacc.CompletionSize }

// Submit hands d to the device and returns the req_id it gave it.
func (q *Queue) Submit(d sacc.Descriptor) (uint32, error) {
	if q.inFlight == q.size-1 { // one slot stays empty: tail == head means empty
		return 0, fmt.Errorf("%d requests in flight: %w", q.inFlight, ErrFull)
	}
	// req_ids count up; with fewer than 2^32 in flight, none repeats among them.
	d.ReqID = q.nextID
	q.nextID++
	var b [sacc.DescriptorSize]byte
	d.Encode(b[:])
	q.c.StoreBytes(q.sqCPU+uint64(q.tail)*sacc.DescriptorSize, b[:])
	q.tail = (q.tail + 1) % q.size
	q.inFlight++
	q.regs.Writel(sacc.RegSQTail, q.tail) // writel: the descriptor is in memory first
	return d.ReqID, nil
}

// Reap hands done every new completion and returns how many it took.
func (q *Queue) Reap(done func(sacc.Completion)) int {
	n := 0
	for n < int(q.size) {
		slot := q.cqCPU + uint64(q.head)*sacc.CompletionSize
		if uint8(q.c.Load16(slot+sacc.CplPhaseOff)&sacc.CplPhaseBit) != q.phase {
			break
		}
		var b [sacc.CompletionSize]byte
		q.c.LoadBytes(slot, b[:])
		done(sacc.DecodeCompletion(b[:]))
		n++
		if q.head++; q.head == q.size {
			q.head, q.phase = 0, q.phase^1
		}
	}
	if n > 0 {
		q.inFlight -= uint32(n)
		q.regs.Writel(sacc.RegCQHead, q.head)
	}
	return n
}

// Close stops the device and frees the rings.
func (q *Queue) Close() {
	q.regs.Writel(sacc.RegCTRL, 0)
	q.pdev.DMAFreeCoherent(q.cqBytes(), q.cqCPU, q.cqDMA)
	q.pdev.DMAFreeCoherent(q.sqBytes(), q.sqCPU, q.sqDMA)
}
