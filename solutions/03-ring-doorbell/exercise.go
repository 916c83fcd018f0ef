// Exercise 03-ring-doorbell: hand one descriptor to the device.
//
// The device is running. Its submission ring (SQ) is in host memory: Size slots
// of 32 bytes, slot i at SQ + 32*i (specification §6.1). The device fetches from
// its own head and stops at the tail the driver last told it about. To give it
// one more job, a driver does three things, in this order (§5.1, §7.1, §7.4):
//
//  1. Write the 32-byte descriptor into the slot at the tail with ordinary CPU
//     stores. sacc.Descriptor.Encode lays the bytes out; c.StoreBytes stores them.
//  2. Make those stores visible before the doorbell: a write barrier, c.WMB().
//     The device reads the ring as soon as the doorbell arrives, and on a weakly
//     ordered CPU a store can still be waiting in the store buffer. (Linux's
//     writel has this barrier built in; writel_relaxed does not.)
//  3. Write the new tail, the slot after the descriptor, to SQ_TAIL, the
//     doorbell at BAR0 offset 0x1000: regs.Writel(sacc.RegSQTail, tail). After
//     slot Size-1 the tail wraps to 0. A tail of Size or more is not a tail: the
//     device halts with error 5 (§7.6).
//
// This is what Linux's NVMe driver does for every command: copy it into the
// queue, then writel the new tail to the queue's doorbell.
//
// Edit this file, then run:
//
//	go test ./exercises/03-ring-doorbell/
//	saccbook check 03-ring-doorbell
package ringdoorbell

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// Queue is the driver's view of a running submission ring.
type Queue struct {
	SQ   uint64 // CPU address of slot 0
	Size uint32 // SQ_SIZE: the number of slots
	Tail uint32 // the next free slot; the device knows about every slot before it
}

// Submit writes d into slot q.Tail, makes it visible, advances q.Tail by one
// (wrapping at q.Size) and rings the doorbell with the new tail. The caller has
// made sure the slot is free.
//
// If q.Size is 0 or q.Tail is not a slot of the ring, Submit returns an error
// and touches neither memory nor the device.
func Submit(c *cpu.CPU, regs *kernel.IOMem, q *Queue, d sacc.Descriptor) error {
	if q.Size == 0 || q.Tail >= q.Size {
		return fmt.Errorf("queue has tail %d in a ring of %d slots", q.Tail, q.Size)
	}
	var b [sacc.DescriptorSize]byte
	d.Encode(b[:])
	c.StoreBytes(q.SQ+uint64(q.Tail)*sacc.DescriptorSize, b[:])
	c.WMB() // §7.4: the descriptor is in memory before the device hears of it
	q.Tail = (q.Tail + 1) % q.Size
	regs.Writel(sacc.RegSQTail, q.Tail)
	return nil
}
