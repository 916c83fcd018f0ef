// Exercise 03-doorbell-budget: keep the device fed when a doorbell is dear.
//
// This machine is a virtual machine. Every write to a device register traps to
// the hypervisor, which emulates it and comes back: the write costs the CPU
// DoorbellCost of virtual time instead of a few ns. The device itself is
// passed through and works at full speed. A driver that rings once per job
// spends most of its time in the hypervisor while the device waits; virtio and
// the NVMe drivers of cloud machines batch their doorbells for this reason.
// Write Feed, which streams jobs through the ring within a time budget.
//
// What you need to know (docs/SPEC.md §5.1, §7.1, §7.3, §11; chapter 3):
//
//   - slot i of the SQ is the 32 bytes at SQ + 32*i (sacc.Descriptor.Encode);
//     SQ_TAIL (sacc.RegSQTail) takes the tail, wrapped at Size: one write hands
//     over every slot up to it, however many that is;
//   - at most Size-1 descriptors may be in flight: a full ring would have
//     tail == head, which the device reads as empty;
//   - regs.Writel orders every earlier store before the doorbell (it is writel),
//     so no other barrier is needed here;
//   - the device runs one job at a time and goes on by itself while the CPU is
//     away in the hypervisor;
//   - reap() is the completion side, done for you: each call looks at the
//     completion queue once (about as long as a cpu_relax), hands the slots of
//     what it found back to the device, and returns how many of your jobs
//     completed since the last call.
//
// The contract the tests hold Feed to (rings of 16 and 8 slots, starting
// anywhere in the ring):
//
//   - the device runs every job of jobs exactly once, in order;
//   - never more than q.Size-1 descriptors in flight, and every doorbell value a
//     slot number;
//   - Feed returns only once reap has reported every job complete; then
//     q.InFlight is 0 and q.Tail is the slot after the last job;
//   - Feed takes at most Budget(len(jobs)) of virtual time, measured from the
//     call to the return.
//
// Edit this file, then run:
//
//	go test ./exercises/03-doorbell-budget/
//	saccbook check 03-doorbell-budget
package doorbellbudget

import (
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/sim"
)

// DoorbellCost is what one register write costs the CPU on this machine: the
// trap to the hypervisor and back.
const DoorbellCost sim.Time = 5_000 // 5 µs

// Budget is how long Feed may take for n jobs: about what the device needs to
// run them, and much less than a doorbell per job would cost.
func Budget(n int) sim.Time { return 20_000 + sim.Time(n)*1_500 }

// Registers is the device's BAR0 (*kernel.IOMem has this method).
type Registers interface {
	Writel(off uint32, v uint32)
}

// Queue is the driver's view of the submission ring.
type Queue struct {
	SQ       uint64 // CPU address of slot 0; slot i is at SQ + 32*i
	Size     uint32 // SQ_SIZE
	Tail     uint32 // the next free slot
	InFlight uint32 // descriptors handed over whose completion reap has not reported yet
}

// Feed hands every descriptor of jobs to the device, in order, and returns once
// reap has reported all of them complete.
func Feed(c *cpu.CPU, regs Registers, q *Queue, jobs []sacc.Descriptor, reap func() int) error {
	next := 0
	for next < len(jobs) || q.InFlight > 0 {
		// Fill every free slot, then ring once for all of them: while the CPU is
		// in the hypervisor the device works through what it has.
		written := 0
		for next < len(jobs) && q.InFlight < q.Size-1 {
			var b [sacc.DescriptorSize]byte
			jobs[next].Encode(b[:])
			c.StoreBytes(q.SQ+uint64(q.Tail)*sacc.DescriptorSize, b[:])
			q.Tail = (q.Tail + 1) % q.Size
			q.InFlight++
			next++
			written++
		}
		if written > 0 {
			regs.Writel(sacc.RegSQTail, q.Tail)
		}
		c.Relax()
		if next == len(jobs) {
			q.InFlight = 0
		}
	}
	return nil
}
