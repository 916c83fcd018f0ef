// Exercise 13-queue: a whole queue, measured.
//
// This is the reference solution; the exercise's file explains the task.
package queue

import (
	"errors"
	"fmt"

	"github.com/saccbook/saccbook/sacc"
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

// timeout bounds the wait for one batch.
const timeout sim.Time = 10_000_000

// Run copies every job through the queue, batch jobs per doorbell (at most
// Size − 1), and measures.
func Run(c *cpu.CPU, regs Registers, q *Ring, jobs []Job, batch int) (Stats, error) {
	if batch < 1 {
		return Stats{}, errors.New("batch must be at least 1")
	}
	batch = min(batch, int(q.Size)-1)
	var st Stats
	start := c.Now()
	var sum sim.Time
	for i := 0; i < len(jobs); i += batch {
		n := min(batch, len(jobs)-i)
		written := make(map[uint32]sim.Time, n)
		for _, j := range jobs[i : i+n] {
			written[q.NextID] = c.Now()
			d := sacc.Descriptor{Src: j.Src, Dst: j.Dst, Length: j.Length, Opcode: sacc.OpMEMCPY, ReqID: q.NextID}
			var b [sacc.DescriptorSize]byte
			d.Encode(b[:])
			c.StoreBytes(q.SQ+uint64(q.Tail)*sacc.DescriptorSize, b[:])
			q.NextID++
			q.Tail = (q.Tail + 1) % q.Size
		}
		c.WMB()
		regs.Writel(sacc.RegSQTail, q.Tail)
		st.Doorbells++
		deadline := c.Now() + timeout
		for done := 0; done < n; {
			got := 0
			for {
				slot := q.CQ + uint64(q.Head)*sacc.CompletionSize
				if uint8(c.Load16(slot+sacc.CplPhaseOff)&sacc.CplPhaseBit) != q.Phase {
					break
				}
				c.RMB()
				var b [sacc.CompletionSize]byte
				c.LoadBytes(slot, b[:])
				cpl := sacc.DecodeCompletion(b[:])
				if q.Head++; q.Head == q.Size {
					q.Head, q.Phase = 0, q.Phase^1
				}
				got++
				if cpl.Status != sacc.StatusOK {
					regs.Writel(sacc.RegCQHead, q.Head)
					return st, fmt.Errorf("req_id %d: %v", cpl.ReqID, cpl.Status)
				}
				lat := c.Now() - written[cpl.ReqID]
				sum += lat
				st.MaxLatency = max(st.MaxLatency, lat)
			}
			if got > 0 {
				regs.Writel(sacc.RegCQHead, q.Head)
				done += got
				continue
			}
			if c.Now() > deadline {
				return st, fmt.Errorf("batch at job %d: %d of %d completions after %d ns", i, done, n, timeout)
			}
			c.Relax()
		}
	}
	st.Total = c.Now() - start
	if len(jobs) > 0 {
		st.MeanLatency = sum / sim.Time(len(jobs))
	}
	return st, nil
}
