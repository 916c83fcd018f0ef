// Exercise 14-fence-emit: put a fence behind the work.
//
// A GPU channel tells its process how far it got by writing a sequence number
// into memory after the work: a fence. SACC has no fence command, but it has
// MEMCPY, and it runs commands one at a time in ring order, so a MEMCPY of 8
// bytes placed after the jobs, copying the point's number into the fence page,
// lands only once every job before it is done (chapter 14). Submit:
//
//   - writes each job's descriptor into the SQ, from slot c.Tail on, wrapping
//     at c.Size (sacc.Descriptor's Encode lays out the 32 bytes; store them
//     with c.P.StoreBytes);
//   - then the fence: c.Point goes up by one, that number goes into a slot of
//     the slots page (8 bytes, c.P.Store64 at c.SlotsVA + 8 × slot), and one
//     more MEMCPY descriptor copies those 8 bytes to the fence page: Src is the
//     same slot's DMA address (c.SlotsDMA + 8 × slot), Dst is c.Fence, Length 8;
//   - the slot must keep its number until the device has run that fence
//     command, which may be long after Submit returned: give every point a
//     slot of its own, slot = point mod c.Slots (more slots than can ever be in
//     flight). One shared slot would already hold a newer number when the
//     device reads it, and the fence would claim work that is not done;
//   - then one write barrier, c.P.Kernel().CPU.WMB(), which makes the
//     descriptors and the number visible to the device (§7.4), and one
//     doorbell: the new c.Tail stored with c.P.Store32 at c.Doorbell (SQ_TAIL;
//     a store into the mapped page is the doorbell);
//   - returns the point: the caller waits until the fence page holds at least
//     that.
//
// Submit makes no system call: only loads and stores of the process and the
// CPU's barrier.
//
// Edit this file, then run:
//
//	go test ./exercises/14-fence-emit/
//	saccbook check 14-fence-emit
package fenceemit

import (
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// Channel is a process's queue used the way a GPU channel is: jobs, then a
// fence.
type Channel struct {
	P        *kernel.Process
	Doorbell uint64 // the mapped doorbell page: SQ_TAIL at +0
	SQ       uint64 // user address of the SQ
	Size     uint32 // entries in the SQ
	Tail     uint32 // the next free SQ slot
	Fence    uint64 // DMA address of the fence page: the device writes the point there
	SlotsVA  uint64 // user address of the slots page
	SlotsDMA uint64 // DMA address of the same page
	Slots    uint64 // how many 8-byte slots the page holds
	Point    uint64 // the last point Submit handed out; 0 before the first
}

// Submit queues jobs, then a fence for the next point, and rings the doorbell
// once; it returns the point. The caller leaves room in the SQ for len(jobs) + 1
// descriptors.
func (c *Channel) Submit(jobs ...sacc.Descriptor) uint64 {
	put := func(d sacc.Descriptor) {
		var b [sacc.DescriptorSize]byte
		d.Encode(b[:])
		c.P.StoreBytes(c.SQ+uint64(c.Tail)*sacc.DescriptorSize, b[:])
		c.Tail = (c.Tail + 1) % c.Size
	}
	// A fence behind every job, where a batch gets one.
	for _, d := range jobs {
		put(d)
		c.Point++
		slot := c.Point % c.Slots
		c.P.Store64(c.SlotsVA+8*slot, c.Point)
		put(sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: c.SlotsDMA + 8*slot, Dst: c.Fence, Length: 8})
	}
	c.P.Kernel().CPU.WMB()
	c.P.Store32(c.Doorbell, c.Tail)
	return c.Point
}
