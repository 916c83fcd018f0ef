// Exercise 11-recover-requests: recover a halted device without losing a request.
//
// 11-recover failed every request that was in flight when the device halted.
// A storage or accelerator driver usually cannot afford that: the caller asked
// for the work, and the work can be done again on a device that works again.
// But not all of it: some requests completed before the halt, and their
// completions are sitting in the CQ, unread. Running those twice is as wrong
// as running the others not at all. Write Recover, which brings the device back
// and sees every request through exactly once.
//
// What you need to know (docs/SPEC.md §6.2, §7.1, §7.2, §7.5, §7.6; chapters
// 6 and 11):
//
//   - a halted device writes nothing more: what it completed before the halt is
//     in the CQ, from slot q.Head on, with the phase q.Phase, and everything
//     else in q.InFlight will never complete;
//   - CTRL.RESET (sacc.CtrlReset) puts every BAR0 register back to 0, the ring
//     registers included, and the device starts again at SQ slot 0 and CQ slot
//     0 with phase 1; the rings in memory keep what they held;
//   - ENABLE needs SQ_BASE, SQ_SIZE, CQ_BASE and CQ_SIZE programmed first, and
//     READY comes an enable latency after it (chapter 2);
//   - a descriptor is handed to the device by writing it into the SQ at the
//     tail and ringing SQ_TAIL with the tail after it (chapter 3); regs.Writel
//     orders earlier stores before the register write.
//
// The contract the tests hold Recover to (halts with none, some, or all of the
// requests completed, across the wrap of the rings):
//
//   - every request in q.InFlight whose completion is in the CQ is marked Done
//     with the completion's status, and leaves q.InFlight;
//   - the device is reset, programmed with the same rings and READY;
//   - the others are submitted again, in their order, from SQ slot 0, and stay
//     in q.InFlight in that order; q.Tail is the slot after the last of them,
//     and q.Head and q.Phase are where their completions will come (the old CQ
//     entries must not look new);
//   - so each request runs on the device exactly once, its completion carrying
//     its own req_id.
//
// Edit this file, then run:
//
//	go test ./exercises/11-recover-requests/
//	saccbook check 11-recover-requests
package recoverrequests

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/sim"
)

// ReadyTimeout is how long Recover waits for READY after ENABLE.
const ReadyTimeout sim.Time = 100_000 // 100 µs

// Registers is the driver's mapping of BAR0 (*kernel.IOMem has these methods).
type Registers interface {
	Readl(off uint32) uint32
	Writel(off uint32, v uint32)
}

// Request is a command the driver submitted.
type Request struct {
	Desc   sacc.Descriptor // what was submitted; Desc.ReqID names the request
	Done   bool            // its completion has been taken
	Status sacc.Status     // the completion's status, once Done
}

// Queue is the driver's state for the device's rings. Without an IOMMU the
// CPU addresses are the DMA addresses too.
type Queue struct {
	SQ, CQ     uint64 // slot 0 of each ring: SQ slot i at SQ + 32*i, CQ entry i at CQ + 16*i
	Size       uint32 // entries in each ring
	Tail, Head uint32 // the driver's SQ tail and CQ head
	Phase      uint8  // the phase a new completion carries
	InFlight   []*Request
}

// Recover brings the halted device back on the same rings, takes the
// completions that arrived before the halt, and submits the rest again.
func Recover(c *cpu.CPU, regs Registers, q *Queue) error {
	// What completed before the halt: its entries are new by their phase. Read
	// them before anything touches the CQ.
	byID := map[uint32]*Request{}
	for _, r := range q.InFlight {
		byID[r.Desc.ReqID] = r
	}
	for range q.Size {
		slot := q.CQ + uint64(q.Head)*sacc.CompletionSize
		if uint8(c.Load16(slot+sacc.CplPhaseOff)&sacc.CplPhaseBit) != q.Phase {
			break
		}
		c.RMB()
		var b [sacc.CompletionSize]byte
		c.LoadBytes(slot, b[:])
		cpl := sacc.DecodeCompletion(b[:])
		_ = byID[cpl.ReqID]
		if q.Head++; q.Head == q.Size {
			q.Head, q.Phase = 0, q.Phase^1
		}
	}
	var again []*Request
	for _, r := range q.InFlight {
		if !r.Done {
			again = append(again, r)
		}
	}
	q.InFlight = again

	// A fresh start: the device from slot 0 and phase 1, the CQ with nothing
	// that looks new.
	regs.Writel(sacc.RegCTRL, sacc.CtrlReset)
	for off := uint64(0); off < uint64(q.Size)*sacc.CompletionSize; off += 8 {
		c.Store64(q.CQ+off, 0)
	}
	q.Tail, q.Head, q.Phase = 0, 0, 1
	regs.Writel(sacc.RegSQBaseLo, uint32(q.SQ))
	regs.Writel(sacc.RegSQBaseHi, uint32(q.SQ>>32))
	regs.Writel(sacc.RegSQSize, q.Size)
	regs.Writel(sacc.RegCQBaseLo, uint32(q.CQ))
	regs.Writel(sacc.RegCQBaseHi, uint32(q.CQ>>32))
	regs.Writel(sacc.RegCQSize, q.Size)
	regs.Writel(sacc.RegCTRL, sacc.CtrlEnable)
	deadline := c.Now() + ReadyTimeout
	for {
		st := regs.Readl(sacc.RegSTATUS)
		if st&sacc.StatusError != 0 {
			return fmt.Errorf("enable refused after reset: ERR_CODE %d", regs.Readl(sacc.RegErrCode))
		}
		if st&sacc.StatusReady != 0 {
			break
		}
		if c.Now() >= deadline {
			return fmt.Errorf("not READY %d ns after ENABLE", ReadyTimeout)
		}
		c.Delay(500)
	}

	// The rest again, in their order.
	for _, r := range q.InFlight {
		var b [sacc.DescriptorSize]byte
		r.Desc.Encode(b[:])
		c.StoreBytes(q.SQ+uint64(q.Tail)*sacc.DescriptorSize, b[:])
		q.Tail = (q.Tail + 1) % q.Size
	}
	if len(q.InFlight) > 0 {
		regs.Writel(sacc.RegSQTail, q.Tail) // writel: the descriptors are in memory first
	}
	return nil
}
