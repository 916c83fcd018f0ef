package ring

import (
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 5_000_000 // 5 ms of virtual time: far more than three laps need

// TestDrivesTheDeviceForThreeLaps uses the learner's Ring to manage the device's
// SQ: fill what Push allows, ring the doorbell with Tail, Pop a slot for every
// completion. The device must run every job once, in order.
func TestDrivesTheDeviceForThreeLaps(t *testing.T) {
	for _, size := range []uint32{4, 8} {
		t.Run(fmt.Sprintf("size %d", size), func(t *testing.T) {
			r := ringrig.Up(t, host.Config{}, size)
			jobs := int(3 * size)
			q := &Ring{Size: size}
			rd := ringrig.NewReader()
			mark := r.Mark()
			sent, done := 0, 0
			r.Do("Ring", budget, func() {
				for done < jobs {
					queued := 0
					for sent < jobs {
						slot, ok := q.Push()
						if !ok {
							break
						}
						if slot >= size {
							return
						}
						r.Put(slot, sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: uint32(sent)})
						sent++
						queued++
					}
					if queued == 0 && q.Len() == 0 {
						return // Push refuses with nothing in flight: no progress is possible
					}
					if queued > 0 {
						r.Regs.Writel(sacc.RegSQTail, q.Tail)
					}
					got := 0
					if !r.Until(100_000, 100, func() bool {
						for {
							c, ok := rd.Next(r)
							if !ok {
								return got > 0
							}
							got++
							done++
							if _, ok := q.Pop(); !ok {
								return true
							}
							// The harness hands the CQ slot back at once.
							r.Regs.Writel(sacc.RegCQHead, rd.Head)
							_ = c
						}
					}) {
						return
					}
				}
			})
			evs := r.Since(mark)
			ran := check.Find(evs, trace.Descriptor)
			if halt := check.Find(evs, trace.DeviceError); len(halt) > 0 {
				bells := check.Find(evs, trace.RegWrite)
				last := uint64(0)
				for _, b := range bells {
					if b.Args[0] == sacc.RegSQTail {
						last = b.Args[2]
					}
				}
				r.Fatalf("The device halted with error %#x after a doorbell of %d on a %d-slot ring: a tail must be a slot number, 0 to %d. "+
					"Did Tail wrap to 0 after slot %d?", halt[0].Args[0], last, size, size-1, size-1)
			}
			if sent == 0 {
				r.Fatalf("Push refused the first job of an empty ring (Ring{Size: %d}): Push() returned ok = false.", size)
			}
			for _, ev := range check.Find(evs, trace.Doorbell) {
				if ev.Args[0] == ev.Args[1] {
					r.Fatalf("A doorbell carried SQ_TAIL %d while the device's head was %d: the ring was completely full, and a full ring "+
						"looks exactly like an empty one. The device saw nothing to do, and the jobs in it are lost. "+
						"Full must be (Tail + 1) mod Size == Head, so one slot always stays empty (§7.3).", ev.Args[0], ev.Args[1])
				}
			}
			if done < jobs || len(ran) != jobs {
				r.Fatalf("%d jobs were submitted through a %d-slot ring; the device ran %d of them and %d completions came back "+
					"(Push handed out %d slots; Len() = %d, Head %d, Tail %d at the end).", jobs, size, len(ran), done, sent, q.Len(), q.Head, q.Tail)
			}
			for i, ev := range ran {
				if ev.Args[0] != uint64(i) {
					r.Fatalf("The device ran req_id %d as job %d: Push handed out slots out of order, or a slot twice.", ev.Args[0], i)
				}
			}
			if !q.Empty() || q.Len() != 0 {
				r.Fatalf("All %d jobs completed and every slot was popped, but Empty() = %v and Len() = %d (Head %d, Tail %d).", jobs, q.Empty(), q.Len(), q.Head, q.Tail)
			}
		})
	}
}

// TestFullEmptyAndLen checks the answers at the edges, the wrap included.
func TestFullEmptyAndLen(t *testing.T) {
	for _, tc := range []struct {
		size, head, tail uint32
		len              uint32
		empty, full      bool
	}{
		{8, 0, 0, 0, true, false},
		{8, 0, 7, 7, false, true},
		{8, 3, 2, 7, false, true},
		{8, 6, 1, 3, false, false},
		{8, 5, 5, 0, true, false},
		{4, 1, 0, 3, false, true},
		{2, 1, 0, 1, false, true},
		{4096, 4000, 10, 106, false, false},
	} {
		q := &Ring{Size: tc.size, Head: tc.head, Tail: tc.tail}
		if got := q.Len(); got != tc.len {
			t.Errorf("Ring{Size: %d, Head: %d, Tail: %d}.Len() = %d, want %d.", tc.size, tc.head, tc.tail, got, tc.len)
		}
		if got := q.Empty(); got != tc.empty {
			t.Errorf("Ring{Size: %d, Head: %d, Tail: %d}.Empty() = %v, want %v.", tc.size, tc.head, tc.tail, got, tc.empty)
		}
		if got := q.Full(); got != tc.full {
			msg := ""
			if tc.head == tc.tail {
				msg = " Head == Tail is empty, never full: a full ring that looked like this would look exactly like an empty one."
			}
			t.Errorf("Ring{Size: %d, Head: %d, Tail: %d}.Full() = %v, want %v.%s", tc.size, tc.head, tc.tail, got, tc.full, msg)
		}
		before := *q
		if _, ok := q.Push(); ok == tc.full {
			t.Errorf("Ring{Size: %d, Head: %d, Tail: %d}.Push() ok = %v, want %v.", tc.size, tc.head, tc.tail, ok, !tc.full)
		} else if tc.full && *q != before {
			t.Errorf("Push on a full ring changed it from %+v to %+v; it must change nothing.", before, *q)
		}
	}
}

// TestPushAndPopAcrossTheWrap checks the slots Push and Pop hand out and where
// they leave the indices, at the last slot and on an empty ring.
func TestPushAndPopAcrossTheWrap(t *testing.T) {
	for _, tc := range []struct {
		size, head, tail uint32
	}{
		{8, 2, 7}, // Push claims the last slot; Tail wraps to 0
		{4, 3, 1}, // Pop releases the last slot; Head wraps to 0
		{2, 0, 1},
		{8, 5, 5},
	} {
		q := &Ring{Size: tc.size, Head: tc.head, Tail: tc.tail}
		before := *q
		empty := tc.head == tc.tail
		full := (tc.tail+1)%tc.size == tc.head
		slot, ok := q.Push()
		switch {
		case full && (ok || *q != before):
			t.Errorf("Ring%+v is full, yet Push() returned (%d, %v) and left %+v: it must refuse and change nothing.", before, slot, ok, *q)
		case !full && !ok:
			t.Errorf("Ring%+v has room, yet Push() refused.", before)
		case !full && slot != tc.tail:
			t.Errorf("Push() on Ring%+v returned slot %d; want %d, the old Tail: that is the slot the producer fills now.", before, slot, tc.tail)
		case !full && q.Tail != (tc.tail+1)%tc.size:
			t.Errorf("Push() on Ring%+v left Tail = %d; want %d: after slot Size − 1 the tail wraps to 0.", before, q.Tail, (tc.tail+1)%tc.size)
		}
		*q = before
		slot, ok = q.Pop()
		switch {
		case empty && (ok || *q != before):
			t.Errorf("Ring%+v is empty, yet Pop() returned (%d, %v) and left %+v: it must refuse and change nothing.", before, slot, ok, *q)
		case !empty && !ok:
			t.Errorf("Ring%+v holds %d entries, yet Pop() refused.", before, (tc.tail-tc.head)%tc.size)
		case !empty && slot != tc.head:
			t.Errorf("Pop() on Ring%+v returned slot %d; want %d, the old Head: the oldest slot in use.", before, slot, tc.head)
		case !empty && q.Head != (tc.head+1)%tc.size:
			t.Errorf("Pop() on Ring%+v left Head = %d; want %d: after slot Size − 1 the head wraps to 0.", before, q.Head, (tc.head+1)%tc.size)
		}
	}
}
