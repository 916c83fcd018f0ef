// Exercise 05-cq-head: give completion slots back to the device.
//
// The device writes completions into the CQ and never overwrites one the driver
// has not read (specification §7.3). But it cannot see the driver read: it knows
// only what the driver writes to CQ_HEAD (BAR0 offset 0x30): the slot the driver
// will read next. Before fetching a job, the device makes sure the CQ has a free
// slot for its answer. The CQ is full when (cq_tail + 1) mod CQ_SIZE == CQ_HEAD;
// then the device stalls, and fetches nothing more until a CQ_HEAD write makes
// room. It carries on by itself then: no new doorbell is needed.
//
// A driver that reads completions but never writes CQ_HEAD gets CQ_SIZE − 1 of
// them, and then nothing, ever.
//
// The tests read the completions for you and call Consumed after each batch.
//
// Edit this file, then run:
//
//	go test ./exercises/05-cq-head/
//	saccbook check 05-cq-head
package cqhead

import (
	"errors"
)

// Registers is the driver's mapping of BAR0 (*kernel.IOMem has this method).
type Registers interface {
	Writel(off uint32, v uint32)
}

// Consumer is the driver's side of the CQ.
type Consumer struct {
	Size uint32 // CQ_SIZE
	Head uint32 // the next slot the driver will read
}

// Consumed records that the driver has read n more completions, the ones in the
// n slots from c.Head on: it moves c.Head past them (wrapping at c.Size) and tells
// the device, so that it may use those slots again. n is at most c.Size − 1; for
// n == 0 it does nothing.
func (c *Consumer) Consumed(regs Registers, n uint32) error {
	// TODO: move Head on by n with wrap, then write it to CQ_HEAD.
	return errors.New("Consumed is not written yet: this is your exercise")
}
