// Exercise 07-doorbell: publish descriptors on a weakly ordered CPU.
//
// A CPU store does not reach memory at once: it waits in a store buffer. On x86
// stores leave the buffer in program order and an MMIO write waits for them, so a
// doorbell can never overtake a descriptor. On arm64 stores drain in any order,
// and writel_relaxed, the doorbell write you are given here, waits for nothing.
// If the doorbell reaches the device first, the device fetches the slot before
// your descriptor is in memory: often zeros, which is a NOP with req_id 0.
//
// The rule (specification §7.4): every descriptor a doorbell hands over must be
// visible in memory before the doorbell is written. c.WMB() is wmb(): every
// store before it is visible before any store after it. (Linux's writel() has
// that barrier built in; writel_relaxed() does not.)
//
// The tests run on arm64 with several seeds, so the store order differs each time.
//
// Edit this file, then run:
//
//	go test ./exercises/07-doorbell/
//	saccbook check 07-doorbell
package doorbell

import (
	"errors"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
)

// Doorbell is the device's BAR0 as a relaxed writer: writel_relaxed, which
// orders nothing against earlier stores to memory.
type Doorbell interface {
	WritelRelaxed(off uint32, v uint32)
}

// Queue is the driver's view of the submission ring.
type Queue struct {
	SQ   uint64 // CPU address of slot 0; slot i is at SQ + 32*i
	Size uint32 // SQ_SIZE
	Tail uint32 // the next free slot
}

// Publish writes descs into consecutive slots from q.Tail (sacc.Descriptor.Encode
// lays out the 32 bytes; c.StoreBytes stores them), moves q.Tail past them
// (wrapping at q.Size), and rings the doorbell once, writing the new tail to
// SQ_TAIL (sacc.RegSQTail). The caller has made sure the slots are free.
func Publish(c *cpu.CPU, db Doorbell, q *Queue, descs []sacc.Descriptor) error {
	// TODO: store every descriptor, then make them visible, then ring once.
	return errors.New("Publish is not written yet: this is your exercise")
}
