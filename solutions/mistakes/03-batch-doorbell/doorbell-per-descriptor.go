// Exercise 03-batch-doorbell: many descriptors, one doorbell.
//
// A doorbell is a tail, not a count: writing SQ_TAIL = t hands the device every
// slot from its head up to, not including, t. So a driver with several jobs can
// write all their descriptors and ring once, with the tail after the last one,
// saving a write across the link per job. NVMe and network drivers batch this
// way when the block layer or the stack hands them several requests at once.
// Write SubmitBatch.
//
// What you need to know (docs/SPEC.md §5.1, §6.1, §7.1, §7.3, §7.4):
//
//   - slot i of the SQ is the 32 bytes at SQ + 32*i (sacc.Descriptor.Encode
//     lays one out); after slot Size-1 comes slot 0, and a doorbell value is
//     always below Size;
//   - tail == head means an empty ring. So at most Size-1 descriptors may be in
//     flight (handed to the device and not yet completed and consumed): if the
//     driver filled every slot, the tail would come back round to the device's
//     head and the device would see no work at all;
//   - every store a doorbell hands over must be in memory before the doorbell
//     lands. c.WMB() orders every earlier store before any later one;
//     regs.Writel includes that barrier, regs.WritelRelaxed does not.
//
// The contract the tests hold SubmitBatch to (on x86 and on arm64 with several
// seeds, across the wrap):
//
//   - descs go into consecutive slots from q.Tail, wrapping at q.Size, in order;
//   - one doorbell for the whole batch, with the tail after the last of them,
//     and every store into those slots lands before it (checked in the trace);
//   - afterwards q.Tail is that tail and q.InFlight has grown by len(descs);
//   - a batch that would leave more than q.Size-1 in flight is refused whole:
//     an error wrapping ErrRingFull, nothing stored, no doorbell, q unchanged;
//   - an empty batch is not an error, and writes and rings nothing.
//
// Edit this file, then run:
//
//	go test ./exercises/03-batch-doorbell/
//	saccbook check 03-batch-doorbell
package batchdoorbell

import (
	"errors"
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// Queue is the driver's view of a running submission ring.
type Queue struct {
	SQ       uint64 // CPU address of slot 0
	Size     uint32 // SQ_SIZE: the number of slots
	Tail     uint32 // the next free slot; the device knows about every slot before it
	InFlight uint32 // descriptors handed to the device whose completions are not consumed yet
}

// ErrRingFull is returned, as it is or wrapped, when a batch does not fit.
var ErrRingFull = errors.New("submission ring full")

// SubmitBatch hands descs to the device with one doorbell, or refuses the
// whole batch with ErrRingFull if it does not fit.
func SubmitBatch(c *cpu.CPU, regs *kernel.IOMem, q *Queue, descs []sacc.Descriptor) error {
	if len(descs) == 0 {
		return nil
	}
	// One slot always stays empty, so that a full ring never looks empty.
	if free := int(q.Size) - 1 - int(q.InFlight); len(descs) > free {
		return fmt.Errorf("%d descriptors, %d free slots: %w", len(descs), max(free, 0), ErrRingFull)
	}
	var b [sacc.DescriptorSize]byte
	for _, d := range descs {
		d.Encode(b[:])
		c.StoreBytes(q.SQ+uint64(q.Tail)*sacc.DescriptorSize, b[:])
		q.Tail = (q.Tail + 1) % q.Size
		regs.Writel(sacc.RegSQTail, q.Tail)
	}
	q.InFlight += uint32(len(descs))
	return nil
}
