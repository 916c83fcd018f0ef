// Exercise 05-cq-head: give completion slots back to the device.
//
// The device writes completions into the CQ and never overwrites one the driver
// has not read. But it cannot see the driver read: it knows only what the
// driver writes to CQ_HEAD. Write Consumed, the step after every batch of
// completions the driver takes.
//
// What you need to know (docs/SPEC.md §5, §5.1, §7.3, §7.6):
//
//   - CQ_HEAD (BAR0 0x30, sacc.RegCQHead; CQ_HEAD_DB at 0x1004 has the same
//     effect) takes the index of the slot the driver will read next, not a
//     count: every slot before it is free again;
//   - the CQ is full when (cq_tail + 1) mod CQ_SIZE == CQ_HEAD. Before fetching
//     a job the device makes sure its answer has a slot; while the CQ is full it
//     stalls, and it carries on by itself once a CQ_HEAD write makes room;
//   - a CQ_HEAD value of CQ_SIZE or more halts the device with error 5.
//
// So a driver that reads completions but never writes CQ_HEAD gets CQ_SIZE − 1
// of them, and then nothing, ever.
//
// The contract the tests hold Consumed to (the tests read the completions for
// you, forty jobs through 8-entry rings, and call Consumed after each batch):
//
//   - c.Head moves on past the n slots from c.Head, wrapping at c.Size;
//   - by the time Consumed returns, the device has been told the new head (the
//     last CQ_HEAD write holds it), and never a head beyond it;
//   - Consumed(regs, 0) changes nothing and writes nothing.
//
// Edit this file, then run:
//
//	go test ./exercises/05-cq-head/
//	saccbook check 05-cq-head
package cqhead

import "github.com/saccbook/saccbook/sacc"

// Registers is the driver's mapping of BAR0 (*kernel.IOMem has this method).
type Registers interface {
	Writel(off uint32, v uint32)
}

// Consumer is the driver's side of the CQ.
type Consumer struct {
	Size uint32 // CQ_SIZE
	Head uint32 // the next slot the driver will read
}

// Consumed records that the driver has read the next n completions (at most
// c.Size − 1), the ones in the n slots from c.Head on, and tells the device.
func (c *Consumer) Consumed(regs Registers, n uint32) error {
	if n == 0 {
		return nil
	}
	c.Head += n
	regs.Writel(sacc.RegCQHead, c.Head) // the slot read next, not a count
	return nil
}
