// Exercise 05-ring: the two indices that make a ring.
//
// A ring is Size slots used in a circle: the producer claims the slot at Tail
// and moves Tail on, the consumer releases the slot at Head and moves Head on,
// and an index that passes the last slot comes back to 0. Everything a driver
// does with the device's rings rests on getting these few lines right. Write
// Ring's methods.
//
// What you need to know (docs/SPEC.md §7.3; chapter 5):
//
//   - Head == Tail means empty, and nothing else may look like that;
//   - so the producer stops one slot early: a ring of Size slots holds at most
//     Size − 1 entries, as NVMe's queues do. If the producer filled the last slot
//     too, its tail would come round onto the head, and a full ring would look
//     exactly like an empty one;
//   - Size is a power of two from 2 to 4096; Head and Tail are always slot
//     numbers, 0 to Size − 1, and Tail may be below Head after a wrap.
//
// The contract the tests hold Ring to:
//
//   - Len, Empty and Full answer for every Head and Tail, across the wrap;
//   - Push returns the slot it claimed (the old Tail) and moves Tail on, with
//     wrap; on a full ring it returns false and changes nothing;
//   - Pop does the same with Head on a non-empty ring, and returns false and
//     changes nothing on an empty one;
//   - the tests also drive the device's submission queue with your Ring for
//     three laps: every slot Push hands out gets a descriptor, the doorbell
//     carries Tail, and every completion Pops a slot. The device must run every
//     job, in order.
//
// Edit this file, then run:
//
//	go test ./exercises/05-ring/
//	saccbook check 05-ring
package ring

// Ring is a ring's two indices. Size is a power of two from 2 to 4096; Head and
// Tail are always slot numbers, 0 to Size − 1.
type Ring struct {
	Size uint32
	Head uint32 // the oldest slot in use (the consumer's next slot)
	Tail uint32 // the next free slot (the producer's next slot)
}

// Len is the number of slots in use.
func (r *Ring) Len() uint32 {
	// Size is a power of two, so the difference masked with Size−1 is right
	// across the wrap too.
	return (r.Tail - r.Head) & (r.Size - 1)
}

// Empty reports whether no slot is in use.
func (r *Ring) Empty() bool { return r.Head == r.Tail }

// Full reports whether the producer must wait: one slot always stays empty.
func (r *Ring) Full() bool { return (r.Tail+1)&(r.Size-1) == r.Head }

// Push claims the slot at Tail and moves Tail on, wrapping at Size. It returns
// the slot, or false (and changes nothing) when the ring is full.
func (r *Ring) Push() (slot uint32, ok bool) {
	if r.Full() {
		return 0, false
	}
	slot = r.Tail
	r.Tail = (r.Tail + 1) & (r.Size - 1)
	return slot, true
}

// Pop releases the slot at Head and moves Head on, wrapping at Size. It returns
// the slot, or false (and changes nothing) when the ring is empty.
func (r *Ring) Pop() (slot uint32, ok bool) {
	if r.Empty() {
		return 0, false
	}
	slot = r.Head
	r.Head = (r.Head + 1) & (r.Size - 1)
	return slot, true
}
