// Exercise 08-irq-handler: the completion interrupt handler.
//
// The device raises vector 0 when it posts a completion that asked for an
// interrupt, but only if IRQ_STATUS bit 0 is clear; then it sets the bit. While
// the bit is set, more completions send nothing more. The driver clears the bit
// by writing 1 to IRQ_ACK (BAR0 offset 0x38, sacc.RegIRQAck, value
// sacc.IRQCompletion). Reading IRQ_STATUS does not clear it (specification §9).
//
// So the order of the two things a handler does matters. Drain the CQ first and
// acknowledge after, and a completion that lands between your last look at the
// CQ and the acknowledgement is lost: the device saw the bit set and sent
// nothing, then your acknowledgement cleared the bit. No interrupt will ever come
// for that completion.
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
// completion in the CQ (by phase, writing CQ_HEAD) and returns how many it
// consumed. Handle returns how many completions this interrupt found; 0 is
// allowed (an interrupt with nothing left to do).
func Handle(regs Registers, reap func() int) int {
	// Acknowledge first: a completion that lands from now on finds IRQ_STATUS
	// clear and raises a new interrupt, even if this drain has already looked.
	regs.Writel(sacc.RegIRQAck, sacc.IRQCompletion)
	return reap()
}
