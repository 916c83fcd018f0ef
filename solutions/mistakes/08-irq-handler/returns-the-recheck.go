// Exercise 08-irq-handler: the completion interrupt handler.
//
// The device raises vector 0 when it posts a completion that asked for an
// interrupt. Write Handle, the handler of that vector: it must tell the device
// the interrupt was seen and take the completions, in an order that never
// strands one.
//
// What you need to know (docs/SPEC.md §5, §9):
//
//   - when the device posts a completion whose descriptor had the interrupt
//     flag, it sends vector 0 only if IRQ_STATUS bit 0 is clear, and then sets
//     the bit; while the bit is set, further completions send nothing more;
//   - writing 1 in bit 0 of IRQ_ACK (BAR0 0x38, sacc.RegIRQAck, value
//     sacc.IRQCompletion) clears the bit; reading IRQ_STATUS does not;
//   - reap() consumes every new completion in the CQ (by phase, writing
//     CQ_HEAD) and returns how many it consumed; it may find nothing.
//
// The contract the tests hold Handle to (a NOP and a copy in one doorbell, for
// many copy lengths, so that the copy's completion lands at every moment of
// the handler's run):
//
//   - every completion is reaped: none is left in the CQ with no interrupt
//     coming for it;
//   - when Handle returns, the interrupt has been acknowledged;
//   - Handle returns how many completions it reaped.
//
// Edit this file, then run:
//
//	go test ./exercises/08-irq-handler/
//	saccbook check 08-irq-handler
package irqhandler

import "github.com/saccbook/saccbook/sacc"

// Registers is the driver's mapping of BAR0 (*kernel.IOMem has this method).
type Registers interface {
	Writel(off uint32, v uint32)
}

// Handle is the handler of the completion vector. reap consumes every new
// completion in the CQ and returns how many it consumed. Handle returns how
// many completions this interrupt found; 0 is allowed (an interrupt with
// nothing left to do).
func Handle(regs Registers, reap func() int) int {
	// Acknowledge first: a completion that lands from now on finds IRQ_STATUS
	// clear and raises a new interrupt, even if this drain has already looked.
	reap()
	regs.Writel(sacc.RegIRQAck, sacc.IRQCompletion)
	return reap()
}
