// Exercise 11-recover: bring a halted device back.
//
// This is the reference solution; the exercise's file explains the task.
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
	q.InFlight = nil
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
