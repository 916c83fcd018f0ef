// Exercise 10-open-queue: the slow path of kernel bypass.
//
// This is the reference solution; the exercise's file explains the task.
package openqueue

import (
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// Queue is what the slow path hands to the fast path: addresses in the
// process's own address space.
type Queue struct {
	FD       int    // the open device file
	Doorbell uint64 // the mapped doorbell page: SQ_TAIL at +0, CQ_HEAD_DB at +4
	SQ, CQ   uint64 // the rings, in the process's memory
	Size     uint32 // entries in each ring
}

// Open takes the SACC queue for process p, with rings of size entries.
func Open(p *kernel.Process, size uint32) (Queue, error) {
	fd, err := p.Open(driver.DevPath)
	if err != nil {
		return Queue{}, err
	}
	q := Queue{FD: fd, Size: size}
	fail := func(err error) (Queue, error) {
		p.Close(fd)
		return Queue{}, err
	}
	if q.Doorbell, err = p.Mmap(fd, driver.MmapDoorbell, sacc.PageSize); err != nil {
		return fail(err)
	}
	if q.SQ, err = p.Alloc(uint64(size) * sacc.DescriptorSize); err != nil {
		return fail(err)
	}
	if q.CQ, err = p.Alloc(uint64(size) * sacc.CompletionSize); err != nil {
		return fail(err)
	}
	arg, err := p.Alloc(driver.RingArgsSize)
	if err != nil {
		return fail(err)
	}
	var b [driver.RingArgsSize]byte
	driver.RingArgs{SQ: q.SQ, CQ: q.CQ, Size: size}.Encode(b[:])
	p.StoreBytes(arg, b[:])
	if _, err := p.Ioctl(fd, driver.IocSetupRings, arg); err != nil {
		return fail(err)
	}
	return q, nil
}
