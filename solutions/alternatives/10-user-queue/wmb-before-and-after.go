// Exercise 10-user-queue: the fast path of kernel bypass.
//
// The slow path is done: the process has the doorbell page mapped and owns the
// device's rings, in its own memory. From here on it submits and completes with
// plain loads and stores, and no system call at all. Write Submit and Poll.
//
// What you need to know (docs/SPEC.md §5.1, §6, §7.2, §7.3, §7.4; chapter 10):
//
//   - the process's memory is reached with q.P.Store64, q.P.StoreBytes,
//     q.P.Load16, q.P.LoadBytes and the like, and the mapped doorbell page with
//     q.P.Store32: SQ_TAIL at Doorbell + 0, CQ_HEAD_DB at Doorbell + 4. The
//     barriers are the CPU's: q.P.Kernel().CPU.WMB(), .RMB() and .MB(). Every
//     other method of q.P (Open, Mmap, Ioctl, Poll, Alloc…) is a system call;
//   - SQ slot i is 32 bytes at SQ + 32*i (sacc.Descriptor.Encode lays one out);
//     the doorbell takes the tail after it, wrapped at Size;
//   - CQ entry i is 16 bytes at CQ + 16*i; it is new if bit 0 of its 16-bit
//     phase field (offset sacc.CplPhaseOff) equals Phase, which starts at 1 and
//     flips each time Head wraps to 0; the device writes the phase last;
//   - on arm64 stores drain in any order, and a load may be performed before an
//     earlier one, unless a barrier orders them. The store to the doorbell
//     page is a posted write to device memory, and on arm64 it does not wait
//     for the store buffer: the write barrier is the driver's;
//   - CQ_HEAD_DB takes the slot the driver will read next; without it the device
//     sees a full CQ after Size − 1 completions and stops (§7.3).
//
// The contract the tests hold the fast path to (three laps of NOPs on x86;
// copies on arm64 with several seeds):
//
//   - every job runs, and Poll hands out each completion once, in order, with
//     the body the device wrote;
//   - a write barrier (WMB or MB) stands between the last store of a descriptor
//     and the doorbell store (checked in the trace on arm64);
//   - a read barrier (RMB or MB) stands between the phase load and the body
//     loads (on arm64 a Poll that took an entry without one fails);
//   - Poll gives the slot back through CQ_HEAD_DB; a Poll that finds nothing new
//     writes nothing;
//   - Submit and Poll make no system call.
//
// Edit this file, then run:
//
//	go test ./exercises/10-user-queue/
//	saccbook check 10-user-queue
package userqueue

import (
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// Queue is a process's own queue on the device.
type Queue struct {
	P        *kernel.Process
	Doorbell uint64 // the mapped doorbell page: SQ_TAIL at +0, CQ_HEAD_DB at +4
	SQ, CQ   uint64 // the rings, user addresses
	Size     uint32 // entries in each ring
	Tail     uint32 // the next free SQ slot
	Head     uint32 // the next CQ slot to look at
	Phase    uint8  // the phase a new completion carries: 1 on the first lap
}

// Submit puts d into the next SQ slot and rings the doorbell. The caller never
// has more than Size − 1 commands in flight.
func (q *Queue) Submit(d sacc.Descriptor) {
	q.P.Kernel().CPU.WMB() // redundant: the one after the stores is what orders them
	var b [sacc.DescriptorSize]byte
	d.Encode(b[:])
	q.P.StoreBytes(q.SQ+uint64(q.Tail)*sacc.DescriptorSize, b[:])
	q.Tail = (q.Tail + 1) % q.Size
	q.P.Kernel().CPU.WMB() // the descriptor is in memory before the doorbell
	q.P.Store32(q.Doorbell+sacc.RegSQTail-sacc.DoorbellPage, q.Tail)
}

// Poll consumes the next completion if a new one is there, and gives its slot
// back to the device.
func (q *Queue) Poll() (sacc.Completion, bool) {
	slot := q.CQ + uint64(q.Head)*sacc.CompletionSize
	if uint8(q.P.Load16(slot+sacc.CplPhaseOff)&sacc.CplPhaseBit) != q.Phase {
		return sacc.Completion{}, false
	}
	q.P.Kernel().CPU.RMB() // the body only after the phase said it is new
	var b [sacc.CompletionSize]byte
	q.P.LoadBytes(slot, b[:])
	c := sacc.DecodeCompletion(b[:])
	if q.Head++; q.Head == q.Size {
		q.Head, q.Phase = 0, q.Phase^1
	}
	q.P.Store32(q.Doorbell+sacc.RegCQHeadDB-sacc.DoorbellPage, q.Head)
	return c, true
}
