// Exercise 13-queue: a whole queue, measured.
//
// This is the capstone: submission and completion together, batched, and
// measured in virtual time (chapter 13). Run copies a list of jobs through the
// device:
//
//   - it writes up to batch descriptors (req_ids NextID, NextID + 1, …), never
//     more than Size − 1 in flight, and rings the doorbell once for them: a
//     write barrier (c.WMB()), then the new Tail to SQ_TAIL (sacc.RegSQTail);
//   - it reaps completions by phase (chapter 6: the phase field at offset
//     sacc.CplPhaseOff of the entry at Head, c.RMB() before the body, Phase
//     flipped when Head wraps) and hands the slots back with one CQ_HEAD write
//     (sacc.RegCQHead) per pass;
//   - when the whole batch has completed, the next batch goes in, until every
//     job has completed. A completion with an error status is an error.
//
// And it measures, with c.Now() (virtual nanoseconds): the total time; each
// job's latency, from just before its descriptor is written to the moment Run
// reads its completion; and the doorbells it rang.
//
// The device works on one job at a time. With 4 KiB copies and no IOMMU it
// needs about 4.4 µs for each, however they are submitted; a queue that keeps
// it busy gets close to that, and the tests hold yours to it.
//
// Edit this file, then run:
//
//	go test ./exercises/13-queue/
//	saccbook check 13-queue
package queue

import (
	"errors"

	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/sim"
)

// Registers is the driver's mapping of BAR0 (*kernel.IOMem has this method).
type Registers interface {
	Writel(off uint32, v uint32)
}

// Job is one copy: DMA addresses and a length.
type Job struct {
	Src, Dst uint64
	Length   uint32
}

// Ring is the driver's view of both rings. Without an IOMMU the CPU addresses
// are the DMA addresses too.
type Ring struct {
	SQ, CQ     uint64 // slot 0 of each ring
	Size       uint32 // entries in each ring
	Tail, Head uint32 // next free SQ slot; next CQ slot to look at
	Phase      uint8  // the phase a new completion carries: 1 on the first lap
	NextID     uint32 // the req_id of the next descriptor
}

// Stats is what Run measured.
type Stats struct {
	Total       sim.Time // from the start of Run to its end
	MeanLatency sim.Time // the mean over all jobs
	MaxLatency  sim.Time
	Doorbells   int // SQ_TAIL writes
}

// Run copies every job through the queue, batch jobs per doorbell (at most
// Size − 1), and measures.
func Run(c *cpu.CPU, regs Registers, q *Ring, jobs []Job, batch int) (Stats, error) {
	// TODO: submit a batch, reap it, measure; until every job is done.
	return Stats{}, errors.New("Run is not written yet: this is your exercise")
}
