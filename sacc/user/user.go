// Package user is the user-space side of kernel bypass: a library a process links
// to drive the SACC queue itself. It opens /dev/sacc0 once, maps only the doorbell
// page, owns its rings in its own (pinned, IOMMU-mapped) memory, and from then on
// submits and completes with plain loads and stores — no system call on the fast
// path. Completion slots go back to the device through CQ_HEAD_DB on the doorbell
// page, which is what SACC v1 added: with only v0.1's CQ_HEAD in the register page,
// a process could never return slots without asking the kernel.
package user

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// Queue is a process's own submission and completion queue on the device.
type Queue struct {
	p        *kernel.Process
	fd       int
	doorbell uint64 // user address of the mapped doorbell page
	sq, cq   uint64 // user addresses of the rings
	size     uint32

	sqTail, cqHead uint32
	phase          uint8
	inFlight       uint32
	nextID         uint32
	scratch        uint64 // a user page for ioctl argument blocks
}

// Completion is what the device reported for one command.
type Completion = sacc.Completion

// Open takes over the device's queue for p with rings of size entries.
func Open(p *kernel.Process, size uint32) (*Queue, error) {
	fd, err := p.Open(driver.DevPath)
	if err != nil {
		return nil, err
	}
	q := &Queue{p: p, fd: fd, size: size, phase: 1}
	fail := func(err error) (*Queue, error) {
		p.Close(fd)
		return nil, err
	}
	if q.doorbell, err = p.Mmap(fd, driver.MmapDoorbell, sacc.PageSize); err != nil {
		return fail(fmt.Errorf("map the doorbell page: %w", err))
	}
	if q.scratch, err = p.Alloc(sacc.PageSize); err != nil {
		return fail(err)
	}
	if q.sq, err = p.Alloc(uint64(size) * sacc.DescriptorSize); err != nil {
		return fail(err)
	}
	if q.cq, err = p.Alloc(uint64(size) * sacc.CompletionSize); err != nil {
		return fail(err)
	}
	driver.RingArgs{SQ: q.sq, CQ: q.cq, Size: size}.Store(p, q.scratch)
	if _, err := p.Ioctl(fd, driver.IocSetupRings, q.scratch); err != nil {
		return fail(fmt.Errorf("take over the queue: %w", err))
	}
	p.TraceDriverCQ(q.cqHead, q.phase)
	return q, nil
}

// DoorbellVA is the process's address of the mapped doorbell page.
func (q *Queue) DoorbellVA() uint64 { return q.doorbell }

// Close gives the queue back to the kernel.
func (q *Queue) Close() error {
	if _, err := q.p.Ioctl(q.fd, driver.IocReleaseRings, 0); err != nil {
		return err
	}
	return q.p.Close(q.fd)
}

// MapBuffer pins a buffer of the process and maps it for the device (one system
// call, at setup time); it returns the DMA address the device uses.
func (q *Queue) MapBuffer(addr, length uint64, dir kernel.Direction) (uint64, error) {
	blk := q.scratch + 256
	driver.MapArgs{Addr: addr, Length: length, Dir: dir}.Store(q.p, blk)
	return q.p.Ioctl(q.fd, driver.IocMapBuffer, blk)
}

// Full reports whether every usable SQ slot is in flight.
func (q *Queue) Full() bool { return q.inFlight == q.size-1 }

// InFlight counts submitted commands not yet completed.
func (q *Queue) InFlight() uint32 { return q.inFlight }

// Put writes a descriptor into the next SQ slot without ringing the doorbell and
// returns its req_id; false when the ring is full.
func (q *Queue) Put(d sacc.Descriptor) (uint32, bool) {
	if q.Full() {
		return 0, false
	}
	d.ReqID = q.nextID
	q.nextID++
	slot := q.sq + uint64(q.sqTail)*sacc.DescriptorSize
	p := q.p
	p.Store64(slot+sacc.DescSrcOff, d.Src)
	p.Store64(slot+sacc.DescDstOff, d.Dst)
	p.Store32(slot+sacc.DescLenOff, d.Length)
	p.Store16(slot+sacc.DescOpOff, d.Opcode)
	p.Store16(slot+sacc.DescFlagsOff, d.Flags)
	p.Store32(slot+sacc.DescReqIDOff, d.ReqID)
	q.sqTail = (q.sqTail + 1) % q.size
	q.inFlight++
	return d.ReqID, true
}

// Ring publishes the queued descriptors: a write barrier, then the tail written
// to the mapped doorbell page — a plain store to device memory, no system call.
func (q *Queue) Ring() {
	q.p.Kernel().CPU.WMB() // descriptors visible before the doorbell
	q.p.Store32(q.doorbell+sacc.RegSQTail-sacc.DoorbellPage, q.sqTail)
}

// Poll consumes one completion if a new one is there: phase first, rmb, then the
// body; the slot goes back to the device through CQ_HEAD_DB.
func (q *Queue) Poll() (Completion, bool) {
	p := q.p
	slot := q.cq + uint64(q.cqHead)*sacc.CompletionSize
	phase := uint8(p.Load16(slot+sacc.CplPhaseOff) & sacc.CplPhaseBit)
	if phase != q.phase {
		return Completion{}, false
	}
	p.Kernel().CPU.RMB()
	c := Completion{
		ReqID:     p.Load32(slot + sacc.CplReqIDOff),
		ResultLen: p.Load32(slot + sacc.CplResultLenOff),
		Status:    sacc.Status(p.Load16(slot + sacc.CplStatusOff)),
		Phase:     phase,
	}
	if q.cqHead++; q.cqHead == q.size {
		q.cqHead = 0
		q.phase ^= 1
	}
	p.TraceDriverCQ(q.cqHead, q.phase)
	q.inFlight--
	p.Store32(q.doorbell+sacc.RegCQHeadDB-sacc.DoorbellPage, q.cqHead)
	return c, true
}

// Wait spins on Poll (cpu_relax between looks) until a completion arrives or
// limit nanoseconds of virtual time pass.
func (q *Queue) Wait(limit uint64) (Completion, error) {
	c := q.p.Kernel().CPU
	deadline := uint64(c.Now()) + limit
	for {
		if cpl, ok := q.Poll(); ok {
			return cpl, nil
		}
		if uint64(c.Now()) > deadline {
			return Completion{}, fmt.Errorf("no completion within %d ns", limit)
		}
		c.Relax()
	}
}
