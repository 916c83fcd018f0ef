// Exercise 11-recover: bring a halted device back.
//
// A device error halts the device (specification §7.6): STATUS.ERROR is set,
// ERR_CODE says why, READY is 0, and the device ignores doorbells and CQ_HEAD
// writes until RESET. Recovery (chapter 11), in this order:
//
//  1. read ERR_CODE (0x3C): the reset will clear it;
//  2. fail every request in flight: their completions will never come. Each
//     gets an error that wraps ErrDeviceHalted and names the code;
//  3. write CTRL (0x08) with bit 1, RESET: every BAR0 register goes back to its
//     power-on value, the ring registers included;
//  4. zero the CQ in memory (Size entries of 16 bytes at CQMem), so that no
//     entry from before the reset carries a phase the driver would take for new,
//     and start the driver's indices again: Tail 0, Head 0, Phase 1;
//  5. program SQ_BASE (0x10 and 0x14), SQ_SIZE (0x18), CQ_BASE (0x20 and 0x24)
//     and CQ_SIZE (0x28), set CTRL.ENABLE (bit 0), and wait for STATUS.READY,
//     giving up after ReadyTimeout, or at once if STATUS.ERROR comes back.
//
// Edit this file, then run:
//
//	go test ./exercises/11-recover/
//	saccbook check 11-recover
package recovery

import (
	"errors"

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
	// TODO: the five steps above.
	return errors.New("Recover is not written yet: this is your exercise")
}
