// Exercise 13-submit-batch: many descriptors, one doorbell, one interrupt.
//
// Ringing the doorbell once per job leaves the device idle between jobs while
// the host catches up; asking for an interrupt on every job costs the host
// about 2.5 µs per job (chapter 13). A batch does better on both counts:
//
//   - write one descriptor per job into the SQ, from slot Tail on, wrapping at
//     Size (sacc.Descriptor's Encode lays out the 32 bytes; req_ids are NextID,
//     NextID + 1, …);
//   - set the interrupt flag (flags bit 0, sacc.FlagInterrupt) on the last
//     descriptor of the batch only: its completion comes last, so one interrupt
//     reports them all;
//   - one write barrier, so every descriptor is in memory before the doorbell
//     (on arm64 the CPU may reorder stores, §7.4);
//   - one doorbell: the new Tail, written to SQ_TAIL (sacc.RegSQTail) with
//     regs.WritelRelaxed, as the SACC driver does (wmb, then writel_relaxed). It
//     is an index, 0 to Size − 1: a value of Size or more halts the device.
//
// Edit this file, then run:
//
//	go test ./exercises/13-submit-batch/
//	saccbook check 13-submit-batch
package submitbatch

import (
	"github.com/saccbook/saccbook/sacc/cpu"
)

// Registers is the driver's mapping of BAR0 (*kernel.IOMem has this method).
// WritelRelaxed is writel_relaxed: a posted MMIO write that does not wait for
// earlier stores to memory, which is why the barrier is yours to write.
type Registers interface {
	WritelRelaxed(off uint32, v uint32)
}

// Job is one copy: DMA addresses and a length.
type Job struct {
	Src, Dst uint64
	Length   uint32
}

// SQ is the driver's view of the submission ring.
type SQ struct {
	Base   uint64 // CPU address of slot 0; slot i is at Base + 32*i
	Size   uint32 // SQ_SIZE
	Tail   uint32 // the next free slot
	NextID uint32 // the req_id the next descriptor gets
}

// SubmitBatch queues one MEMCPY per job and rings the doorbell once; it returns
// the req_ids it gave the jobs, in order. The caller guarantees there is room
// for all of them. An empty batch writes nothing.
func SubmitBatch(c *cpu.CPU, regs Registers, q *SQ, jobs []Job) []uint32 {
	// TODO: descriptors, interrupt flag on the last, wmb, one SQ_TAIL write.
	return nil
}
