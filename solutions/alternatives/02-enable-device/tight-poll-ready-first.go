// Exercise 02-enable-device: program the rings, set ENABLE, wait for READY.
//
// Before SACC fetches any work, the driver tells it where the two rings are and
// turns it on: steps 3, 5 and 6 of the bring-up in docs/SPEC.md §7.5, the part
// of a probe that NVMe drivers do with CC.EN, CSTS.RDY and the CAP.TO timeout.
// Write Start.
//
// What you need to know (docs/SPEC.md §5, §7.5, §7.6):
//
//   - SQ_BASE (0x10, 64 bits: low half at 0x10, high half at 0x14), SQ_SIZE
//     (0x18), CQ_BASE (0x20 and 0x24) and CQ_SIZE (0x28) take the rings' DMA
//     addresses and sizes in entries. A 32-bit access works at every offset, a
//     64-bit one at 0x10 and 0x20 only;
//   - the device ignores writes to these four registers while CTRL.ENABLE is 1;
//   - CTRL (0x08) bit 0 is ENABLE. When it is set, the device checks the rings
//     (sizes powers of two from 2 to 4096, bases 4 KiB aligned). If they are
//     wrong it refuses: STATUS.ERROR (bit 1) becomes 1, ERR_CODE (0x3C) reads 6,
//     and READY never comes;
//   - STATUS (0x0C) bit 0, READY, becomes 1 one enable latency after ENABLE:
//     2 µs by default, never at the same instant, and on some machines much
//     later. Writes are posted: a register write returns before the device
//     has acted on it;
//   - c.Now() is the virtual time in ns; c.Delay(ns) and c.Relax() let it pass.
//
// The contract the tests hold Start to:
//
//   - every ring register ends up holding r, high halves included, whatever an
//     earlier driver left in them;
//   - ENABLE is written only after the ring registers;
//   - Start returns nil only once STATUS.READY is 1;
//   - it returns an error when STATUS.ERROR is set, within a quarter of
//     ReadyTimeout of the device setting it, and the error says what ERR_CODE
//     reads;
//   - it returns an error when READY has not come ReadyTimeout after ENABLE,
//     and no later than twice ReadyTimeout after it: that is time, measured
//     with c.Now(), not a number of polls.
//
// Edit this file, then run:
//
//	go test ./exercises/02-enable-device/
//	saccbook check 02-enable-device
package enabledevice

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
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
// mapped, memory decoding and bus mastering on), sets CTRL.ENABLE and waits
// until the device is READY, refuses, or ReadyTimeout has passed.
func Start(c *cpu.CPU, regs *kernel.IOMem, r Rings) error {
	// §5: the ring registers are frozen while ENABLE is 1, so they come first.
	regs.Writel(sacc.RegSQBaseLo, uint32(r.SQBase))
	regs.Writel(sacc.RegSQBaseHi, uint32(r.SQBase>>32))
	regs.Writel(sacc.RegSQSize, r.SQSize)
	regs.Writel(sacc.RegCQBaseLo, uint32(r.CQBase))
	regs.Writel(sacc.RegCQBaseHi, uint32(r.CQBase>>32))
	regs.Writel(sacc.RegCQSize, r.CQSize)
	regs.Writel(sacc.RegCTRL, sacc.CtrlEnable)

	// §7.5: READY comes one enable latency later, never at once.
	for start := c.Now(); c.Now()-start <= ReadyTimeout; {
		switch status := regs.Readl(sacc.RegSTATUS); {
		case status&sacc.StatusReady != 0:
			return nil
		case status&sacc.StatusError != 0:
			return fmt.Errorf("ENABLE refused, ERR_CODE %d", regs.Readl(sacc.RegErrCode))
		}
	}
	return fmt.Errorf("not READY after %d ns", ReadyTimeout)
}
