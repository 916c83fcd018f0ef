// Exercise 03-ring-doorbell: hand one descriptor to the device.
//
// The device is running and its submission ring (SQ) is in host memory. It
// fetches from its own head and stops at the tail the driver last told it
// about. Write Submit, which gives it one more job: what Linux's NVMe driver
// does for every command (copy it into the queue, then write the new tail to
// the queue's doorbell).
//
// What you need to know (docs/SPEC.md §5.1, §6.1, §7.1, §7.4, §7.6):
//
//   - the SQ is Size slots of 32 bytes, slot i at SQ + 32*i; sacc.Descriptor's
//     Encode lays a descriptor out as §6.1 says, and c.StoreBytes stores bytes
//     with ordinary CPU stores;
//   - SQ_TAIL (BAR0 0x1000, sacc.RegSQTail) is the doorbell. Its value is a
//     tail: the device takes every slot from its head up to, not including, that
//     slot. After slot Size-1 comes slot 0; a value of Size or more halts the
//     device with error 5;
//   - the device may read the slot the moment the doorbell lands. A CPU store
//     can still be waiting in the store buffer then: on arm64 stores drain in
//     any order. c.WMB() makes every earlier store visible before any later one;
//     regs.Writel has that barrier built in (Linux's writel), and
//     regs.WritelRelaxed does not (writel_relaxed).
//
// The contract the tests hold Submit to (on x86 and on arm64, with several
// seeds, lap after lap round the ring):
//
//   - d ends up in slot q.Tail, every field of it;
//   - every store into that slot lands in memory before the doorbell reaches
//     the device (the tests check the order in the trace);
//   - the doorbell is written once, with the slot after the descriptor, wrapped
//     at q.Size; q.Tail holds that new tail afterwards;
//   - if q.Size is 0 or q.Tail is not a slot of the ring, Submit returns an
//     error and touches neither memory nor the device.
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

// Submit hands d to the device in slot q.Tail and moves q.Tail on. The caller
// has made sure the slot is free.
func Submit(c *cpu.CPU, regs *kernel.IOMem, q *Queue, d sacc.Descriptor) error {
	if q.Size == 0 || q.Tail >= q.Size {
		return fmt.Errorf("queue has tail %d in a ring of %d slots", q.Tail, q.Size)
	}
	var b [sacc.DescriptorSize]byte
	d.Encode(b[:])
	c.StoreBytes(q.SQ+uint64(q.Tail)*sacc.DescriptorSize, b[:])
	q.Tail = (q.Tail + 1) % q.Size
	regs.WritelRelaxed(sacc.RegSQTail, q.Tail)
	c.WMB()
	return nil
}
