// Package fencerig is what the exercises of chapter 14 share: a machine with the
// IOMMU on, the SACC driver loaded, and a process that owns the device's queue
// the way a GPU's user-mode driver owns a channel: its rings, a fence page the
// device writes a sequence number into, a page of sequence-number slots the
// device copies from, and buffers for copy jobs. It also holds the harness's own
// fence code, the half of the work each exercise does not ask for.
package fencerig

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const (
	// RingSize is the entries in each of the channel's rings: room for 31 jobs
	// with a fence each before anything must be handed back.
	RingSize = 64
	// Jobs is how many job buffers the rig maps.
	Jobs = 16
	// JobSize is the bytes one job copies.
	JobSize = 1024
	// Slots is how many sequence numbers the slots page holds.
	Slots = sacc.PageSize / 8
)

// Buffer is memory of the process mapped for the device.
type Buffer struct{ VA, DMA uint64 }

// Rig is a booted system with the driver bound and one process, "umd", that owns
// the queue.
type Rig struct {
	*check.Machine
	Drv *driver.Driver
	P   *kernel.Process

	Doorbell uint64 // the mapped doorbell page: SQ_TAIL at +0, CQ_HEAD_DB at +4
	SQ, CQ   uint64 // the rings, user addresses
	Fence    Buffer // the fence page: the device writes the point at its start
	SlotPage Buffer // the sequence-number slots fence commands copy from
	Src      Buffer // JobSize bytes of data every job copies
	Dst      Buffer // Jobs × JobSize bytes: job i copies into Dst + i × JobSize

	// Tail and Point are the harness's own submission state (Submit).
	Tail  uint32
	Point uint64
	fd    int
	t     testing.TB
}

// Up boots a machine with the IOMMU on, loads the driver, starts the process,
// takes the queue and maps the fence page, the slots and the job buffers. The
// job buffers are read once, so the CPU caches them as a program that checks
// its buffers would.
func Up(t testing.TB, c cpu.Config, seed uint64) *Rig {
	t.Helper()
	m := check.Boot(t, host.Config{
		Machine: machine.Config{Seed: seed},
		CPU:     c,
		Kernel:  kernel.Config{IOMMU: true},
	})
	d, err := driver.Register(m.K, driver.Config{RingSize: 8})
	if err != nil {
		t.Fatalf("check: load the driver: %v", err)
	}
	r := &Rig{Machine: m, Drv: d, P: m.K.NewProcess("umd"), t: t}
	p := r.P
	if r.fd, err = p.Open(driver.DevPath); err != nil {
		t.Fatalf("check: open: %v", err)
	}
	if r.Doorbell, err = p.Mmap(r.fd, driver.MmapDoorbell, sacc.PageSize); err != nil {
		t.Fatalf("check: mmap: %v", err)
	}
	r.SQ, r.CQ = r.alloc(RingSize*sacc.DescriptorSize), r.alloc(RingSize*sacc.CompletionSize)
	var b [driver.RingArgsSize]byte
	driver.RingArgs{SQ: r.SQ, CQ: r.CQ, Size: RingSize}.Encode(b[:])
	if _, err := p.Ioctl(r.fd, driver.IocSetupRings, r.userBytes(b[:])); err != nil {
		t.Fatalf("check: SETUP_RINGS: %v", err)
	}
	r.Fence = r.buffer(sacc.PageSize, kernel.DMAFromDevice)
	r.SlotPage = r.buffer(sacc.PageSize, kernel.DMAToDevice)
	r.Src = r.buffer(JobSize, kernel.DMAToDevice)
	r.Dst = r.buffer(Jobs*JobSize, kernel.DMAFromDevice)
	p.StoreBytes(r.Src.VA, Pattern())
	for i := range Jobs {
		p.Load64(r.Out(i))
	}
	p.Load64(r.Fence.VA)
	m.CPU.WMB()
	return r
}

// Pattern is what every job copies.
func Pattern() []byte {
	return bytes.Repeat([]byte("fence me "), JobSize/9+1)[:JobSize]
}

func (r *Rig) alloc(n uint64) uint64 {
	r.t.Helper()
	va, err := r.P.Alloc(n)
	if err != nil {
		r.t.Fatalf("check: alloc: %v", err)
	}
	return va
}

func (r *Rig) userBytes(b []byte) uint64 {
	va := r.alloc(uint64(len(b)))
	r.P.StoreBytes(va, b)
	return va
}

func (r *Rig) buffer(n uint64, dir kernel.Direction) Buffer {
	r.t.Helper()
	va := r.alloc(n)
	var b [driver.MapArgsSize]byte
	driver.MapArgs{Addr: va, Length: n, Dir: dir}.Encode(b[:])
	dma, err := r.P.Ioctl(r.fd, driver.IocMapBuffer, r.userBytes(b[:]))
	if err != nil {
		r.t.Fatalf("check: MAP_BUFFER: %v", err)
	}
	return Buffer{va, dma}
}

// Job is the copy into job buffer i.
func (r *Rig) Job(i int) sacc.Descriptor {
	return sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: r.Src.DMA, Dst: r.Dst.DMA + uint64(i)*JobSize, Length: JobSize, ReqID: uint32(i + 1)}
}

// Out is the user address of job buffer i.
func (r *Rig) Out(i int) uint64 { return r.Dst.VA + uint64(i)*JobSize }

// Done reports, straight from RAM and without cost, whether job i's copy is in
// place (the device writes a whole copy at once).
func (r *Rig) Done(i int) bool {
	got := make([]byte, JobSize)
	r.M.RAM().Read(r.phys(r.Out(i)), got)
	return bytes.Equal(got, Pattern())
}

// FenceValue is the fence page's value, straight from RAM and without cost.
func (r *Rig) FenceValue() uint64 {
	var b [8]byte
	r.M.RAM().Read(r.phys(r.Fence.VA), b[:])
	return binary.LittleEndian.Uint64(b[:])
}

func (r *Rig) phys(va uint64) uint64 {
	sg, err := r.P.PinUserPages(va, 1)
	if err != nil {
		r.t.Fatalf("check: user address %#x is not mapped", va)
	}
	r.P.UnpinUserPages(sg)
	return sg[0].Phys
}

// Submit is the harness's own submission: the jobs, then one fence command
// that copies point into the fence page from a slot of its own, then one
// doorbell. It returns the point.
func (r *Rig) Submit(point uint64, jobs ...sacc.Descriptor) uint64 {
	p := r.P
	put := func(d sacc.Descriptor) {
		var b [sacc.DescriptorSize]byte
		d.Encode(b[:])
		p.StoreBytes(r.SQ+uint64(r.Tail)*sacc.DescriptorSize, b[:])
		r.Tail = (r.Tail + 1) % RingSize
	}
	for _, d := range jobs {
		put(d)
	}
	slot := point % Slots
	p.Store64(r.SlotPage.VA+slot*8, point)
	put(sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: r.SlotPage.DMA + slot*8, Dst: r.Fence.DMA, Length: 8, ReqID: 0xf000_0000 | uint32(point)})
	r.CPU.WMB()
	p.Store32(r.Doorbell, r.Tail)
	r.Point = point
	return point
}

// WaitFor is the harness's own wait: it spins until the fence page has reached
// point or limit ns have passed, and reports whether it got there.
func (r *Rig) WaitFor(point uint64, limit sim.Time) bool {
	deadline := r.M.Now() + limit
	for r.M.Now() <= deadline {
		if r.P.Load64(r.Fence.VA) >= point {
			r.CPU.RMB()
			return true
		}
		r.CPU.Relax()
	}
	return false
}

// FenceWrites lists the device's DMA writes into the fence page, in order.
func (r *Rig) FenceWrites(evs []trace.Event) []trace.Event {
	var out []trace.Event
	for _, ev := range check.Find(evs, trace.DMAWrite) {
		if ev.Args[0] == r.Fence.DMA {
			out = append(out, ev)
		}
	}
	return out
}
