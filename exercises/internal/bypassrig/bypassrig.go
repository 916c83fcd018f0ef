// Package bypassrig is what the exercises of chapter 10 share: a machine with
// the IOMMU on, the SACC driver loaded and a user process, plus the harness's
// own slow path (open, map the doorbell page, hand over the rings) for the tests
// of the fast path.
package bypassrig

import (
	"errors"
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/sim"
)

// Rig is a booted system with the driver bound and one process, "app".
type Rig struct {
	*check.Machine
	Drv *driver.Driver
	P   *kernel.Process
	t   testing.TB
}

// Up boots a machine with the IOMMU on, loads the driver and starts a process.
// seed drives the machine's random choices (on arm64, the order in which the
// store buffer drains). quirks, if any, are switched on (the tests use them to
// catch what a wrong answer would get away with on a correct machine).
func Up(t testing.TB, arch cpu.Arch, seed uint64, quirks ...quirk.Quirk) *Rig {
	t.Helper()
	return UpOn(t, cpu.Config{Arch: arch}, seed, quirks...)
}

// UpOn is Up with the CPU given in full (for one whose loads may be performed
// further ahead of their place, say: cpu.Config.MaxHoist).
func UpOn(t testing.TB, c cpu.Config, seed uint64, quirks ...quirk.Quirk) *Rig {
	t.Helper()
	var qs quirk.Set
	for _, q := range quirks {
		qs = qs.With(q)
	}
	m := check.Boot(t, host.Config{
		Machine: machine.Config{Quirks: qs, Seed: seed},
		CPU:     c,
		Kernel:  kernel.Config{IOMMU: true, Quirks: qs},
	})
	d, err := driver.Register(m.K, driver.Config{RingSize: 8})
	if err != nil {
		t.Fatalf("check: load the driver: %v", err)
	}
	return &Rig{Machine: m, Drv: d, P: m.K.NewProcess("app"), t: t}
}

// Queue is the harness's own slow path: what the fast path starts from.
type Queue struct {
	FD       int
	Doorbell uint64
	SQ, CQ   uint64
	Size     uint32
}

// Open is the reference slow path: open, map the doorbell page, allocate the
// rings and hand them to the driver.
func (r *Rig) Open(size uint32) Queue {
	r.t.Helper()
	p := r.P
	fd, err := p.Open(driver.DevPath)
	if err != nil {
		r.t.Fatalf("check: open: %v", err)
	}
	q := Queue{FD: fd, Size: size}
	if q.Doorbell, err = p.Mmap(fd, driver.MmapDoorbell, sacc.PageSize); err != nil {
		r.t.Fatalf("check: mmap: %v", err)
	}
	if q.SQ, err = p.Alloc(uint64(size) * sacc.DescriptorSize); err != nil {
		r.t.Fatalf("check: alloc: %v", err)
	}
	if q.CQ, err = p.Alloc(uint64(size) * sacc.CompletionSize); err != nil {
		r.t.Fatalf("check: alloc: %v", err)
	}
	var b [driver.RingArgsSize]byte
	driver.RingArgs{SQ: q.SQ, CQ: q.CQ, Size: size}.Encode(b[:])
	arg := r.UserBytes(b[:])
	if _, err := p.Ioctl(fd, driver.IocSetupRings, arg); err != nil {
		r.t.Fatalf("check: SETUP_RINGS: %v", err)
	}
	return q
}

// UserBytes copies b into a fresh allocation of the process and returns its
// user address.
func (r *Rig) UserBytes(b []byte) uint64 {
	r.t.Helper()
	va, err := r.P.Alloc(uint64(len(b)))
	if err != nil {
		r.t.Fatalf("check: alloc: %v", err)
	}
	r.P.StoreBytes(va, b)
	return va
}

// MapBuffer maps n bytes of user memory at va for the device (ioctl
// MAP_BUFFER on the open device file fd) and returns the DMA address.
func (r *Rig) MapBuffer(fd int, va, n uint64, dir kernel.Direction) uint64 {
	r.t.Helper()
	var b [driver.MapArgsSize]byte
	driver.MapArgs{Addr: va, Length: n, Dir: dir}.Encode(b[:])
	arg := r.UserBytes(b[:])
	dma, err := r.P.Ioctl(fd, driver.IocMapBuffer, arg)
	if err != nil {
		r.t.Fatalf("check: MAP_BUFFER: %v", err)
	}
	return dma
}

// Phys is the physical address behind a user address, found without cost or
// trace (the process's pages are pinned for a moment and unpinned).
func (r *Rig) Phys(va uint64) (uint64, bool) {
	sg, err := r.P.PinUserPages(va, 1)
	if err != nil {
		return 0, false
	}
	r.P.UnpinUserPages(sg)
	return sg[0].Phys, true
}

// Completion reads CQ slot i of a ring at user address cq straight from RAM.
func (r *Rig) Completion(cq uint64, i uint32) (sacc.Completion, error) {
	phys, ok := r.Phys(cq + uint64(i)*sacc.CompletionSize)
	if !ok {
		return sacc.Completion{}, fmt.Errorf("user address %#x is not mapped in the process", cq+uint64(i)*sacc.CompletionSize)
	}
	var b [sacc.CompletionSize]byte
	r.M.RAM().Read(phys, b[:])
	return sacc.DecodeCompletion(b[:]), nil
}

// Safely runs f, turning a segmentation fault of the process into an error. It
// runs f under a sim.Run of its own, as a signal handler catches SIGSEGV; any other
// stop or panic goes on to the Run around it (check's Do).
func Safely(f func()) error {
	err := sim.Run(func() error {
		f()
		return nil
	})
	var sf *kernel.Segfault
	if errors.As(err, &sf) {
		return sf
	}
	sim.Forward(err)
	return nil
}
