// Exercise 03-batch-doorbell: many descriptors, one doorbell.
//
// A doorbell is a tail, not a count (specification §5.1): writing SQ_TAIL = t
// hands the device every slot from its head up to, not including, t. So a driver
// with several jobs writes all their descriptors first and rings once, with the
// tail after the last one. That saves a write across the link per job; NVMe and
// network drivers batch this way when the block layer or the stack hands them
// several requests at once.
//
// Two rules keep the ring sane (§7.1, §7.3):
//
//   - The tail wraps: after slot Size-1 comes slot 0, and the doorbell value is
//     always below Size.
//   - At most Size-1 descriptors may be in flight (handed to the device and not
//     yet completed and consumed). If the driver filled every slot, the tail
//     would come back round to the device's head, and tail == head means "empty":
//     the device would see no work at all. A batch that does not fit is refused
//     whole, before anything is written.
//
// Each descriptor is 32 bytes, slot i at SQ + 32*i (sacc.Descriptor.Encode lays
// it out). The stores must be visible before the doorbell: c.WMB(), once, after
// the last one.
//
// Edit this file, then run:
//
//	go test ./exercises/03-batch-doorbell/
//	saccbook check 03-batch-doorbell
package batchdoorbell

import (
	"errors"

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

// SubmitBatch writes descs into consecutive slots starting at q.Tail, wrapping
// at q.Size, makes them visible, and rings the doorbell once with the tail after
// the last of them. It advances q.Tail and adds len(descs) to q.InFlight.
//
// If the batch would leave more than q.Size-1 descriptors in flight, SubmitBatch
// returns an error wrapping ErrRingFull and writes nothing. An empty batch writes
// nothing and rings nothing.
func SubmitBatch(c *cpu.CPU, regs *kernel.IOMem, q *Queue, descs []sacc.Descriptor) error {
	// TODO: check the batch fits, store every descriptor, wmb, advance the tail,
	// ring once.
	return errors.New("SubmitBatch is not written yet: this is your exercise")
}
