// Exercise 13-queue: a whole queue, measured.
//
// This is the capstone: submission and completion together, batched, and
// measured in virtual time. Run copies a list of jobs through the device, batch
// by batch, and says how long it took and how long each job waited. Write Run.
//
// What you need to know (docs/SPEC.md §5, §6, §7.1 to §7.4, §11; chapters 3,
// 5, 6 and 13):
//
//   - SQ slot i is 32 bytes at SQ + 32*i (sacc.Descriptor.Encode); SQ_TAIL
//     (sacc.RegSQTail) takes the tail after the last descriptor, wrapped at
//     Size; regs.Writel orders the stores before it. At most Size − 1
//     descriptors may be in flight;
//   - CQ entry i is 16 bytes at CQ + 16*i; it is new when bit 0 of its phase
//     field (offset sacc.CplPhaseOff) equals Phase, which flips each time Head
//     wraps; c.RMB() goes between the phase and the body; CQ_HEAD
//     (sacc.RegCQHead) takes the slot the driver will read next;
//   - c.Now() is the virtual time in ns; c.Relax() is the pause of a polling
//     loop;
//   - the device works on one job at a time. With 4 KiB copies and no IOMMU it
//     needs about 4.4 µs for each, however they are submitted.
//
// The contract the tests hold Run to (48 copies of 4 KiB through 16-entry
// rings, batches of 1, 4, 15 and 40):
//
//   - every job is copied, with its own descriptor (req_ids NextID, NextID + 1,
//     …), and a completion with an error status makes Run return an error;
//   - each batch is min(batch, Size − 1) jobs handed over with one doorbell;
//     the next batch goes in once the whole batch has completed;
//   - Stats.Doorbells counts the SQ_TAIL writes; Stats.Total is the virtual
//     time from the start of Run to its end; a job's latency runs from just
//     before its descriptor is written to the moment Run reads its completion,
//     and MeanLatency and MaxLatency are over all jobs;
//   - the queue keeps the device busy: Total is at most 1.25 times the device's
//     own time for the 48 jobs with batches of 1, 1.10 times with batches of 4,
//     1.05 times with batches of 15 or more;
//   - in a batch of b the device runs one job after another, T each, so the
//     mean latency lies between 0.8 and 1.25 times T × (b + 1) / 2 (plus 1 µs),
//     and the maximum between 0.8 and 1.25 times T × b (plus 1 µs).
//
// Edit this file, then run:
//
//	go test ./exercises/13-queue/
//	saccbook check 13-queue
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
			c.Delay(5_000)
		}
	}
	st.Total = c.Now() - start
	if len(jobs) > 0 {
		st.MeanLatency = sum / sim.Time(len(jobs))
	}
	return st, nil
}
