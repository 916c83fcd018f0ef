// Exercise 08-irq-readback: an interrupt handler that does not trust a posted write.
//
// On PCIe a register write is posted: the CPU sends it off and goes on, and the
// write reaches the device some time later. IRQ_ACK is such a write. A handler
// that acknowledges and then looks at the CQ at once may look before its
// acknowledgement has arrived; a completion that lands in that gap finds
// IRQ_STATUS still set, raises nothing, and the late acknowledgement then
// clears the bit: the completion is stranded, exactly as in chapter 8's race.
// Write Handle so that this cannot happen, however long the write takes.
//
// What you need to know (docs/SPEC.md §5, §9, §11; chapter 8):
//
//   - the completion interrupt rule: the device sends vector 0 for a
//     completion that asked for one only if IRQ_STATUS bit 0 is clear, and then
//     sets the bit. Writing sacc.IRQCompletion to IRQ_ACK (sacc.RegIRQAck)
//     clears it; reading IRQ_STATUS (sacc.RegIRQStatus) does not;
//   - PCIe orders a read behind every posted write to the same device: the
//     answer to regs.Readl cannot come back before the writes issued before it
//     have arrived. Reading any register back is how a driver knows its write
//     has landed (Linux drivers call it flushing a posted write);
//   - reap() consumes every new completion in the CQ and returns how many; it
//     may find nothing. It reads host memory only.
//
// On this machine the acknowledgement lands mmio_write ns after Handle issues
// it (saccbook costs), so some copy lengths strand a completion and others do
// not; the tests therefore check the order in which Handle issues its register
// accesses and its looks at the CQ, as well as what was lost.
//
// The contract the tests hold Handle to (a NOP and a copy in one doorbell, for
// many copy lengths, so that the copy's completion lands at every moment of
// the handler's run):
//
//   - no completion is stranded, and when Handle returns the interrupt has
//     been acknowledged;
//   - the handler's last look at the CQ comes after its last IRQ_ACK, and
//     either a register read stands between the two (acknowledge, read back,
//     drain), or the CQ was drained before the acknowledgement too (drain,
//     acknowledge, drain again);
//   - Handle returns how many completions it reaped.
//
// Edit this file, then run:
//
//	go test ./exercises/08-irq-readback/
//	saccbook check 08-irq-readback
package irqreadback

import "github.com/saccbook/saccbook/sacc"

// Registers is the driver's mapping of BAR0 (*kernel.IOMem has these methods).
type Registers interface {
	Readl(off uint32) uint32
	Writel(off uint32, v uint32)
}

// Handle is the handler of the completion vector. reap consumes every new
// completion in the CQ and returns how many it consumed. Handle returns how
// many completions this interrupt found.
func Handle(regs Registers, reap func() int) int {
	regs.Writel(sacc.RegIRQAck, sacc.IRQCompletion)
	n := reap()
	regs.Readl(sacc.RegIRQStatus)
	return n
}
