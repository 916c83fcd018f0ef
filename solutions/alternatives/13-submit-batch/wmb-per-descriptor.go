// Exercise 13-submit-batch: many descriptors, one doorbell, one interrupt.
//
// Ringing the doorbell once per job leaves the device idle between jobs while
// the host catches up; asking for an interrupt on every job costs the host
// about 2.5 µs per job. A batch does better on both counts. Write SubmitBatch,
// the submission half of the capstone, as the SACC driver does it (wmb, then
// writel_relaxed).
//
// What you need to know (docs/SPEC.md §5.1, §6.1, §7.4, §9; chapter 13):
//
//   - slot i of the SQ is 32 bytes at Base + 32*i (sacc.Descriptor.Encode lays
//     one out); the tail wraps at Size, and SQ_TAIL (sacc.RegSQTail) takes the
//     tail after the last descriptor: a value of Size or more halts the device;
//   - flags bit 0 (sacc.FlagInterrupt) asks for an interrupt when that
//     command completes; the device completes in ring order, so the last
//     descriptor's completion comes last;
//   - regs.WritelRelaxed is writel_relaxed: it does not wait for earlier stores
//     to memory, and on arm64 stores drain in any order. c.WMB() makes every
//     earlier store visible before any later one.
//
// The contract the tests hold SubmitBatch to (three batches of five copies
// into a 16-entry ring that starts at slot 12, so that a batch wraps, on x86
// and on arm64 with several seeds):
//
//   - one MEMCPY per job, with the job's Src, Dst and Length, in consecutive
//     slots from q.Tail, req_ids NextID, NextID + 1, …; it returns those req_ids
//     in order, and leaves q.Tail and q.NextID after them;
//   - the interrupt flag on the last descriptor of the batch only;
//   - one doorbell, with the new tail, and every store into the batch's slots
//     lands before it (checked in the trace);
//   - an empty batch writes nothing and rings nothing.
//
// Edit this file, then run:
//
//	go test ./exercises/13-submit-batch/
//	saccbook check 13-submit-batch
package submitbatch

import (
	"github.com/saccbook/saccbook/sacc"
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
// for all of them.
func SubmitBatch(c *cpu.CPU, regs Registers, q *SQ, jobs []Job) []uint32 {
	if len(jobs) == 0 {
		return nil
	}
	ids := make([]uint32, len(jobs))
	for i, j := range jobs {
		d := sacc.Descriptor{Src: j.Src, Dst: j.Dst, Length: j.Length, Opcode: sacc.OpMEMCPY, ReqID: q.NextID}
		if i == len(jobs)-1 {
			d.Flags = sacc.FlagInterrupt
		}
		var b [sacc.DescriptorSize]byte
		d.Encode(b[:])
		c.StoreBytes(q.Base+uint64(q.Tail)*sacc.DescriptorSize, b[:])
		c.WMB() // after every descriptor: more barriers than needed, the last one is the one that counts
		ids[i] = q.NextID
		q.NextID++
		q.Tail = (q.Tail + 1) % q.Size
	}
	c.WMB()
	regs.WritelRelaxed(sacc.RegSQTail, q.Tail)
	return ids
}
