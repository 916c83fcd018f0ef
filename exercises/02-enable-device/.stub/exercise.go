// Exercise 02-enable-device: program the rings, set ENABLE, wait for READY.
//
// Before SACC fetches any work, the driver tells it where the two rings are and
// turns it on (specification §7.5, steps 3, 5 and 6):
//
//   - SQ_BASE (0x10, 64 bits: low half at 0x10, high half at 0x14), SQ_SIZE
//     (0x18), CQ_BASE (0x20 and 0x24) and CQ_SIZE (0x28) get the rings' DMA
//     addresses and sizes. The device refuses changes to these registers while
//     CTRL.ENABLE is 1 (§5), and it checks them when ENABLE is set: sizes must be
//     powers of two from 2 to 4096, bases 4 KiB aligned. If they are not, it
//     refuses: STATUS.ERROR (bit 1) becomes 1 and ERR_CODE (0x3C) reads 6.
//   - CTRL (0x08) bit 0 is ENABLE.
//   - STATUS (0x0C) bit 0, READY, becomes 1 one enable latency after ENABLE: 2 µs
//     by default, never at the same instant, and on some machines much later. The
//     driver polls STATUS until READY is 1, pausing between reads (c.Delay(ns) or
//     c.Relax()), and gives up after a deadline (c.Now() is the virtual time in
//     ns). NVMe drivers do the same with CC.EN and CSTS.RDY and the CAP.TO timeout.
//
// The registers may still hold what an earlier driver left there: write every
// one of them, the high halves too.
//
// Edit this file, then run:
//
//	go test ./exercises/02-enable-device/
//	saccbook check 02-enable-device
package enabledevice

import (
	"errors"

	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/sim"
)

// Rings says where the submission and completion rings are, as the device must
// see them: DMA addresses, and sizes in entries.
type Rings struct {
	SQBase uint64 // DMA address of the submission ring
	SQSize uint32 // descriptors in it
	CQBase uint64 // DMA address of the completion ring
	CQSize uint32 // entries in it
}

// ReadyTimeout is how long Start waits for STATUS.READY after setting ENABLE,
// in nanoseconds of virtual time.
const ReadyTimeout sim.Time = 100_000 // 100 µs

// Start programs r into the device's ring registers through regs (BAR0, already
// mapped, memory decoding and bus mastering on), then sets CTRL.ENABLE and waits
// until STATUS.READY is 1.
//
// It returns nil once the device is READY. It returns an error, at once, if
// STATUS.ERROR is set (the device refused the ENABLE; say what ERR_CODE reads),
// and an error if READY has not come ReadyTimeout after ENABLE was set.
func Start(c *cpu.CPU, regs *kernel.IOMem, r Rings) error {
	// TODO: write SQ_BASE, SQ_SIZE, CQ_BASE, CQ_SIZE; set CTRL.ENABLE; wait for
	// STATUS.READY, with a deadline.
	return errors.New("Start is not written yet: this is your exercise")
}
