// Exercise 07-doorbell: publish descriptors on a weakly ordered CPU.
//
// A CPU store does not reach memory at once: it waits in a store buffer. On x86
// stores leave the buffer in program order and an MMIO write waits for them, so
// a doorbell can never overtake a descriptor. On arm64 stores drain in any
// order, and writel_relaxed, the doorbell write you are given here, waits for
// nothing. Write Publish so that it is correct there too.
//
// What you need to know (docs/SPEC.md §5.1, §6.1, §7.4; chapter 7):
//
//   - every descriptor a doorbell hands over must be visible in memory before
//     the doorbell reaches the device: the device fetches the slot as soon as
//     it hears of it, and a descriptor still in the store buffer reads as
//     whatever the slot held before (often zeros: a NOP with req_id 0);
//   - c.WMB() is wmb(): every store before it is visible before any store after
//     it. c.MB() orders loads too. c.RMB() orders loads only;
//   - slot i is the 32 bytes at SQ + 32*i (sacc.Descriptor.Encode lays one
//     out); SQ_TAIL (sacc.RegSQTail) takes the tail after the last descriptor,
//     wrapped at Size.
//
// The contract the tests hold Publish to (batches of two copies, on arm64 with
// five seeds, so the store order differs each time, and on x86):
//
//   - descs go into consecutive slots from q.Tail, wrapping at q.Size, and
//     q.Tail ends up after the last of them;
//   - one doorbell per Publish, with the new tail;
//   - every store into the batch's slots lands in memory before the doorbell
//     (the tests check the order in the trace, not only what the device read).
//
// Edit this file, then run:
//
//	go test ./exercises/07-doorbell/
//	saccbook check 07-doorbell
package doorbell

import (
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
)

// Doorbell is the device's BAR0 as a relaxed writer: writel_relaxed, which
// orders nothing against earlier stores to memory.
type Doorbell interface {
	WritelRelaxed(off uint32, v uint32)
}

// Queue is the driver's view of the submission ring.
type Queue struct {
	SQ   uint64 // CPU address of slot 0; slot i is at SQ + 32*i
	Size uint32 // SQ_SIZE
	Tail uint32 // the next free slot
}

// Publish hands descs to the device with one doorbell. The caller has made sure
// the slots are free.
func Publish(c *cpu.CPU, db Doorbell, q *Queue, descs []sacc.Descriptor) error {
	for _, d := range descs {
		c.WMB() // one before each descriptor: more than needed, and harmless
		var b [sacc.DescriptorSize]byte
		d.Encode(b[:])
		c.StoreBytes(q.SQ+uint64(q.Tail)*sacc.DescriptorSize, b[:])
		q.Tail = (q.Tail + 1) % q.Size
	}
	c.WMB() // the descriptors above are in memory before the doorbell below
	db.WritelRelaxed(sacc.RegSQTail, q.Tail)
	return nil
}
