// Exercise 13-submit-batch: many descriptors, one doorbell, one interrupt.
//
// This is the reference solution; the exercise's file explains the task.
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
// for all of them. An empty batch writes nothing.
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
		ids[i] = q.NextID
		q.NextID++
		q.Tail = (q.Tail + 1) % q.Size
	}
	c.WMB()
	regs.WritelRelaxed(sacc.RegSQTail, q.Tail)
	return ids
}
