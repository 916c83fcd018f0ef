// Exercise 10-open-queue: the slow path of kernel bypass.
//
// Before a process can submit without system calls, it makes a few, once: it
// opens the device, maps the doorbell page into its own address space, puts
// the rings in its own memory and hands them to the driver. That is what
// user-space drivers (SPDK, RDMA verbs, GPU runtimes) do at start-up. Write
// Open.
//
// What you need to know (docs/SPEC.md §5.1; chapter 10; sacc/driver/uapi.go):
//
//   - p.Open(driver.DevPath) opens /dev/sacc0 and returns a file descriptor;
//     p.Close(fd) closes it;
//   - p.Mmap(fd, offset, length) maps part of the device file: offset
//     driver.MmapDoorbell, length sacc.PageSize is the doorbell page, with
//     SQ_TAIL at +0 and CQ_HEAD_DB at +4. Offset 0 is the register page, which
//     is the kernel's (a real driver refuses to map it);
//   - p.Alloc(n) returns n bytes of the process's own memory, zeroed and page
//     aligned; a ring of size entries takes size × sacc.DescriptorSize bytes for
//     the SQ and size × sacc.CompletionSize for the CQ;
//   - p.Ioctl(fd, driver.IocSetupRings, arg) hands the rings to the driver,
//     which pins them, maps them for the device and programs it. Its argument
//     is the user address of a block of driver.RingArgsSize bytes in the
//     process's memory holding a driver.RingArgs (its Encode lays the block
//     out); p.StoreBytes copies bytes into the process's memory. The driver
//     refuses sizes that are not powers of two;
//   - every method of p is a system call, and any of them can fail.
//
// The contract the tests hold Open to:
//
//   - it returns the open file, the address of the doorbell page (and of that
//     page only: the register page stays unmapped), the rings' addresses in the
//     process's memory and their size, with the driver set up on those rings;
//   - if any step fails, Open returns the error, and the device file is closed
//     before it does;
//   - it makes no more system calls than it needs: the tests allow 8.
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
	return Queue{}, errors.New("Open is not written yet: this is your exercise")
}
