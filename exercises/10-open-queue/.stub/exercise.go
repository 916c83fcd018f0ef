// Exercise 10-open-queue: the slow path of kernel bypass.
//
// Before a process can submit without system calls, it makes a few, once
// (chapter 10):
//
//  1. open the device file, driver.DevPath (/dev/sacc0), with p.Open;
//  2. map the doorbell page, and only that page: p.Mmap(fd, driver.MmapDoorbell,
//     sacc.PageSize). SQ_TAIL is then at the returned address + 0, CQ_HEAD_DB at
//     + 4. The register page (offset 0) is the kernel's: the driver refuses it;
//  3. allocate the two rings in the process's own memory with p.Alloc: size
//     descriptors of sacc.DescriptorSize bytes, and size completions of
//     sacc.CompletionSize bytes (p.Alloc returns zeroed, page-aligned memory);
//  4. hand them to the driver with p.Ioctl(fd, driver.IocSetupRings, arg). The
//     argument is the user address of a block of driver.RingArgsSize bytes in the
//     process's memory: allocate it, fill in a driver.RingArgs (the SQ's and the
//     CQ's user addresses and size), Encode it into a byte array and copy that in
//     with p.StoreBytes. The driver pins and maps both rings and points the
//     device at them.
//
// Every p.Something call is a system call. If a step fails, close the file
// before you return the error: a process that gives up must not keep the device
// open.
//
// Edit this file, then run:
//
//	go test ./exercises/10-open-queue/
//	saccbook check 10-open-queue
package openqueue

import (
	"errors"

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
	// TODO: open, mmap the doorbell page, allocate the rings, ioctl SETUP_RINGS.
	return Queue{}, errors.New("Open is not written yet: this is your exercise")
}
