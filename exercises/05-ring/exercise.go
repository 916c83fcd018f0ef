// Exercise 05-ring: the two indices that make a ring.
//
// A ring is Size slots used in a circle. The producer claims the slot at Tail
// and moves Tail on by one; the consumer releases the slot at Head and moves Head
// on by one. An index that reaches Size goes back to 0: the ring wraps.
//
// Head == Tail means empty. So the producer must stop one slot early: the ring is
// full when (Tail + 1) mod Size == Head, and a ring of Size slots holds at most
// Size − 1 entries (specification §7.3; NVMe does the same). If the producer
// filled the last slot too, its tail would come round onto the head, and a full
// ring would look exactly like an empty one.
//
// The tests use your Ring to manage the device's submission queue: every slot
// Push hands out gets a descriptor, the doorbell carries Tail, and every
// completion Pops a slot. The device must run every job, lap after lap.
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
	// TODO: count the slots from Head up to Tail, across the wrap.
	return 0
}

// Empty reports whether no slot is in use.
func (r *Ring) Empty() bool {
	// TODO
	return false
}

// Full reports whether the producer must wait: one slot always stays empty.
func (r *Ring) Full() bool {
	// TODO
	return false
}

// Push claims the slot at Tail and moves Tail on, wrapping at Size. It returns
// the slot, or false (and changes nothing) when the ring is full.
func (r *Ring) Push() (slot uint32, ok bool) {
	// TODO
	return 0, false
}

// Pop releases the slot at Head and moves Head on, wrapping at Size. It returns
// the slot, or false (and changes nothing) when the ring is empty.
func (r *Ring) Pop() (slot uint32, ok bool) {
	// TODO
	return 0, false
}
