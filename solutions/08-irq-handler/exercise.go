// Exercise 08-irq-handler: the completion interrupt handler.
//
// The device raises vector 0 when it posts a completion that asked for an
// interrupt, but only if IRQ_STATUS bit 0 is clear; then it sets the bit. While
// the bit is set, more completions send nothing more. The driver clears the bit
// by writing 1 to IRQ_ACK (BAR0 offset 0x38, sacc.RegIRQAck, value
// sacc.IRQCompletion). Reading IRQ_STATUS does not clear it (specification §9).
//
// So the order of what a handler does matters. Drain the CQ first and
// acknowledge after, and a completion that lands between your last look at the
// CQ and the acknowledgement is lost: the device saw the bit set and sent
// nothing, then your acknowledgement cleared the bit. No interrupt will ever come
// for that completion.
//
// Acknowledging first is not enough either. The write to IRQ_ACK is posted: the
// CPU moves on at once, and the write reaches the device about 500 ns later. A
// completion posted in that time still finds the bit set. Only a read from the
// same device tells you the write has arrived: a read cannot pass a posted write
// to the same device, and its answer cannot pass the completions the device wrote
// before it (Linux's Documentation/memory-barriers.txt and
// core-api/dma-api-howto.rst say the same).
//
// Edit this file, then run:
//
//	go test ./exercises/08-irq-handler/
//	saccbook check 08-irq-handler
package irqhandler

import "github.com/saccbook/saccbook/sacc"

// Registers is the driver's mapping of BAR0 (*kernel.IOMem has these methods).
type Registers interface {
	Writel(off uint32, v uint32)
	Readl(off uint32) uint32
}

// Handle is the handler of the completion vector. reap consumes every new
// completion in the CQ (by phase, writing CQ_HEAD) and returns how many it
// consumed. Handle returns how many completions this interrupt found; 0 is
// allowed (an interrupt with nothing left to do).
func Handle(regs Registers, reap func() int) int {
	// Acknowledge first, then read a register of the same device back: the read
	// cannot pass the posted IRQ_ACK, so when it returns the acknowledgement has
	// landed, and every completion posted before it is in memory. A completion
	// that lands from then on finds IRQ_STATUS clear and raises a new interrupt,
	// even if this drain has already looked.
	regs.Writel(sacc.RegIRQAck, sacc.IRQCompletion)
	regs.Readl(sacc.RegIRQStatus)
	return reap()
}
