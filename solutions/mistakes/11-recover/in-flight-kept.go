// Exercise 11-recover: bring a halted device back.
//
// A device error halts the device, and it stays halted until RESET: the rings
// can no longer be trusted, and nothing in flight will complete. Write Recover,
// the recovery a driver's error handler runs (as NVMe's reset work does): tell
// the waiting requests, reset, and start again from scratch on the same rings.
//
// What you need to know (docs/SPEC.md §5, §7.2, §7.5, §7.6; chapter 11):
//
//   - a halted device has STATUS.ERROR set, READY clear, and ERR_CODE (0x3C)
//     says why; it ignores doorbells and CQ_HEAD writes;
//   - CTRL (0x08) bit 1, RESET (sacc.CtrlReset), puts every BAR0 register back
//     to its power-on value, ERR_CODE and the ring registers included;
//   - after RESET the device starts again at SQ slot 0 and CQ slot 0 with phase
//     1, as on the first day, but the CQ in memory still holds what it held;
//   - ENABLE is refused (ERR_CODE 6) unless SQ_BASE (0x10, 0x14), SQ_SIZE
//     (0x18), CQ_BASE (0x20, 0x24) and CQ_SIZE (0x28) hold a valid
//     configuration; READY comes one enable latency after ENABLE (chapter 2).
//
// The contract the tests hold Recover to:
//
//   - every request in q.InFlight gets an error that wraps ErrDeviceHalted and
//     names the ERR_CODE the device halted with, and q.InFlight is emptied;
//   - the device is reset, programmed with q's rings again and READY when
//     Recover returns nil; the whole CQ in memory (Size entries of 16 bytes at
//     q.CQMem) is zeroed, and q.Tail, q.Head and q.Phase are 0, 0 and 1, so
//     that a job submitted afterwards in slot 0 completes in slot 0;
//   - if ENABLE is refused, or READY has not come ReadyTimeout after ENABLE,
//     Recover returns an error, no later than twice ReadyTimeout after ENABLE.
//
// Edit this file, then run:
//
//	go test ./exercises/11-recover/
//	saccbook check 11-recover
package recovery

import (
	"errors"
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/sim"
)

// ErrDeviceHalted is wrapped by the error of every request that was in flight
// when the device halted.
var ErrDeviceHalted = errors.New("device halted")

// ReadyTimeout is how long Recover waits for READY after ENABLE.
const ReadyTimeout sim.Time = 100_000 // 100 µs

// Registers is the driver's mapping of BAR0 (*kernel.IOMem has these methods).
type Registers interface {
	Readl(off uint32) uint32
	Writel(off uint32, v uint32)
}

// Request is a command the driver submitted.
type Request struct {
	ReqID uint32
	Err   error // set when the request fails without a completion
}

// Queue is the driver's state for the device's rings.
type Queue struct {
	SQ, CQ     uint64 // DMA addresses of the rings: what SQ_BASE and CQ_BASE hold
	CQMem      uint64 // CPU address of the CQ
	Size       uint32 // entries in each ring
	Tail, Head uint32 // the driver's SQ tail and CQ head
	Phase      uint8  // the phase a new completion carries
	InFlight   []*Request
}

// Recover resets the halted device and starts it again on the same rings. It
// returns nil once the device is READY.
func Recover(c *cpu.CPU, regs Registers, q *Queue) error {
	code := regs.Readl(sacc.RegErrCode) // before RESET clears it
	for _, r := range q.InFlight {
		r.Err = fmt.Errorf("req_id %d: %w (ERR_CODE %d: %v)", r.ReqID, ErrDeviceHalted, code, sacc.Status(code))
	}
	regs.Writel(sacc.RegCTRL, sacc.CtrlReset)
	for off := uint64(0); off < uint64(q.Size)*sacc.CompletionSize; off += 8 {
		c.Store64(q.CQMem+off, 0)
	}
	c.WMB()
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
			return nil
		}
		if c.Now() >= deadline {
			return fmt.Errorf("not READY %d ns after ENABLE", ReadyTimeout)
		}
		c.Delay(500)
	}
}
