// Exercise 10-user-queue: the fast path of kernel bypass.
//
// The slow path is done: the process has the doorbell page mapped and owns the
// device's rings, in its own memory. From here on it submits and completes with
// plain loads and stores, and no system call at all (chapter 10):
//
//   - Submit writes the 32-byte descriptor into SQ slot Tail (sacc.Descriptor's
//     Encode lays it out), moves Tail on (wrapping at Size), makes the
//     descriptor visible with a write barrier, and stores the new Tail at
//     Doorbell + 0 (SQ_TAIL): the store to the mapped page is the doorbell;
//   - Poll looks at CQ slot Head: the entry is new if bit 0 of its 16-bit phase
//     field (offset sacc.CplPhaseOff) equals Phase. If so, a read barrier, then
//     the rest of the entry (sacc.DecodeCompletion decodes 16 bytes); Head moves
//     on, and Phase flips when Head wraps to 0. Then the slot goes back to the
//     device: store Head at Doorbell + 4, CQ_HEAD_DB. Without that, the device
//     sees a full CQ after Size − 1 completions and stops (§7.3).
//
// The process's memory is reached with q.P.Store64, q.P.StoreBytes, q.P.Load16,
// q.P.LoadBytes and the like; the doorbell page with q.P.Store32. The barriers
// are the CPU's: q.P.Kernel().CPU.WMB() and .RMB(). Any other method of q.P
// (Open, Mmap, Ioctl, Poll, Alloc…) is a system call, and the point is to make none.
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
	// TODO: write d at slot q.Tail, move q.Tail on, wmb, store q.Tail at
	// q.Doorbell + 0.
}

// Poll consumes the next completion if a new one is there, and gives its slot
// back to the device.
func (q *Queue) Poll() (sacc.Completion, bool) {
	// TODO: phase check at slot q.Head, rmb, read the entry, move q.Head on
	// (flip q.Phase on wrap), store q.Head at q.Doorbell + 4.
	return sacc.Completion{}, false
}
