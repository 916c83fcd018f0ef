// Exercise 10-user-queue: the fast path of kernel bypass.
//
// This is the reference solution; the exercise's file explains the task.
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
