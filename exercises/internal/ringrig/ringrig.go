// Package ringrig is what the ring exercises (chapters 03 and 05–08) share: a booted
// machine with the SACC device running and its rings programmed, the state a
// driver's probe leaves it in, and a reference submitter and completion reader
// that the tests use for the half of the driver the learner is not writing.
//
// The harness reads completions straight from RAM and submits with ordinary
// CPU stores, a barrier and a doorbell, so the learner's code is the only part
// of a test that can go wrong.
package ringrig

import (
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/device"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Rig is a machine with the SACC running and no driver.
type Rig struct {
	*check.Machine
	PDev *kernel.PCIDev
	Regs *kernel.IOMem // BAR0
	SQ   uint64        // CPU address of SQ slot 0 (the DMA address too: no IOMMU)
	CQ   uint64        // CPU address of CQ slot 0
	Size uint32        // SQ_SIZE and CQ_SIZE

	// The harness's own submission state, for tests that submit for the learner.
	Tail   uint32 // next free SQ slot
	NextID uint32 // req_id of the next job Submit queues
}

// Up boots cfg and brings the device up with rings of size entries: memory
// decoding and bus mastering on, BAR0 mapped, both rings zeroed in coherent
// memory, programmed, and the device enabled and READY. MSI-X stays as it is at
// power-on: disabled, every vector masked.
func Up(t testing.TB, cfg host.Config, size uint32) *Rig {
	t.Helper()
	m := check.Boot(t, cfg)
	devs := m.K.Devices()
	if len(devs) != 1 {
		t.Fatalf("check: the kernel found %d PCI functions, want 1", len(devs))
	}
	r := &Rig{Machine: m, PDev: devs[0], Size: size}
	if err := r.PDev.EnableDevice(); err != nil {
		t.Fatalf("check: pci_enable_device: %v", err)
	}
	r.PDev.SetMaster()
	var err error
	if r.Regs, err = r.PDev.IOMap(0); err != nil {
		t.Fatalf("check: pci_iomap: %v", err)
	}
	var sqDMA, cqDMA uint64
	if r.SQ, sqDMA, err = r.PDev.DMAAllocCoherent(uint64(size) * sacc.DescriptorSize); err != nil {
		t.Fatalf("check: allocate the SQ: %v", err)
	}
	if r.CQ, cqDMA, err = r.PDev.DMAAllocCoherent(uint64(size) * sacc.CompletionSize); err != nil {
		t.Fatalf("check: allocate the CQ: %v", err)
	}
	r.Regs.Writeq(sacc.RegSQBaseLo, sqDMA)
	r.Regs.Writel(sacc.RegSQSize, size)
	r.Regs.Writeq(sacc.RegCQBaseLo, cqDMA)
	r.Regs.Writel(sacc.RegCQSize, size)
	r.Regs.Writel(sacc.RegCTRL, sacc.CtrlEnable)
	for i := 0; r.Regs.Readl(sacc.RegSTATUS)&sacc.StatusReady == 0; i++ {
		if i == 100 {
			t.Fatalf("check: the device did not become READY")
		}
		m.CPU.Delay(500)
	}
	return r
}

// State is the device's registers and ring state, read without side effects.
func (r *Rig) State() device.State { return r.M.Device().State() }

// Buffer allocates kernel memory holding data (drained to RAM) and returns its
// address.
func (r *Rig) Buffer(t testing.TB, data []byte) uint64 {
	t.Helper()
	p, err := r.K.AllocPages(uint64(len(data)))
	if err != nil {
		t.Fatalf("check: allocate a buffer: %v", err)
	}
	r.CPU.StoreBytes(p, data)
	r.CPU.WMB()
	return p
}

// Put writes d into SQ slot i with CPU stores and a write barrier (no doorbell).
func (r *Rig) Put(i uint32, d sacc.Descriptor) {
	var b [sacc.DescriptorSize]byte
	d.Encode(b[:])
	r.CPU.StoreBytes(r.SQ+uint64(i)*sacc.DescriptorSize, b[:])
	r.CPU.WMB()
}

// Submit queues d at the harness's tail with the next req_id and rings the
// doorbell; it returns the req_id. The caller keeps fewer than Size jobs in
// flight.
func (r *Rig) Submit(d sacc.Descriptor) uint32 {
	d.ReqID = r.NextID
	r.NextID++
	r.Put(r.Tail, d)
	r.Tail = (r.Tail + 1) % r.Size
	r.Regs.Writel(sacc.RegSQTail, r.Tail)
	return d.ReqID
}

// Entry is CQ slot i as it is in RAM now.
func (r *Rig) Entry(i uint32) sacc.Completion {
	var b [sacc.CompletionSize]byte
	r.M.RAM().Read(r.CQ+uint64(i)*sacc.CompletionSize, b[:])
	return sacc.DecodeCompletion(b[:])
}

// Reader is the harness's completion reader: it reads entries by phase straight
// from RAM, costing no virtual time, and never writes CQ_HEAD.
type Reader struct {
	Head  uint32
	Phase uint8
}

// NewReader starts at slot 0 expecting phase 1 (§7.2).
func NewReader() *Reader { return &Reader{Phase: 1} }

// Next returns the next new completion, if there is one.
func (rd *Reader) Next(r *Rig) (sacc.Completion, bool) {
	c := r.Entry(rd.Head)
	if c.Phase != rd.Phase {
		return c, false
	}
	if rd.Head++; rd.Head == r.Size {
		rd.Head, rd.Phase = 0, rd.Phase^1
	}
	return c, true
}

// Errors lists the device errors and guest errors among events.
func Errors(events []trace.Event) []trace.Event {
	return check.Find(events, trace.DeviceError, trace.GuestError, trace.CQFull)
}

// Until lets the machine run, in steps of step ns, until done reports true or
// limit ns of virtual time have passed; it reports done's last answer.
func (r *Rig) Until(limit, step sim.Time, done func() bool) bool {
	end := r.M.Now() + limit
	for !done() {
		if r.M.Now() >= end {
			return false
		}
		r.CPU.Delay(step)
	}
	return true
}

// Doorbells are the SQ_TAIL writes among events, as the device saw them.
func Doorbells(events []trace.Event) []trace.Event {
	var out []trace.Event
	for _, ev := range check.Find(events, trace.RegWrite) {
		if ev.Args[0] == sacc.RegSQTail {
			out = append(out, ev)
		}
	}
	return out
}

// IssuedDoorbells are the SQ_TAIL writes among events as the CPU issued them
// (cpu_mmio_write): the moment program order is decided. Each lands at the
// device, as a Doorbells event, one posted-write latency later.
func IssuedDoorbells(events []trace.Event) []trace.Event {
	var out []trace.Event
	for _, ev := range events {
		if isDoorbellIssue(ev) {
			out = append(out, ev)
		}
	}
	return out
}

func isDoorbellIssue(ev trace.Event) bool {
	return ev.Kind == trace.CPUMMIOWrite && ev.Args[0] == 0 && ev.Args[1] == sacc.RegSQTail
}

// LateStores checks §7.4 in the trace, where the CPU issues the doorbell: every
// CPU store into the n SQ slots from slot first (wrapping at size) of the ring
// at sq must have landed in memory before the first doorbell among events left
// the CPU. The doorbell is a posted write: it reaches the device a little later,
// and whatever drains the store buffer meanwhile (a barrier after the doorbell,
// the buffer's own draining) lands the stores before it by luck, not by order.
// So a store still in the store buffer when the doorbell is issued, or made
// after it, is late. It returns the stores into those slots that landed after
// the issue, and the issued doorbell; ok is false if there was no doorbell.
func LateStores(events []trace.Event, sq uint64, size, first, n uint32) (late []trace.Event, doorbell trace.Event, ok bool) {
	in := func(addr uint64) bool {
		for i := range n {
			slot := sq + uint64((first+i)%size)*sacc.DescriptorSize
			if addr >= slot && addr < slot+sacc.DescriptorSize {
				return true
			}
		}
		return false
	}
	for _, ev := range events {
		switch {
		case !ok && isDoorbellIssue(ev):
			doorbell, ok = ev, true
		case ok && (ev.Kind == trace.CPUWrite || ev.Kind == trace.CPUStoreCached) && in(ev.Args[0]):
			late = append(late, ev)
		}
	}
	return late, doorbell, ok
}

// Barriers counts the write barriers (wmb or mb, explicit or inside writel)
// and the read barriers (rmb or mb) among events.
func Barriers(events []trace.Event) (writes, reads int) {
	for _, ev := range check.Find(events, trace.CPUBarrier) {
		switch ev.Args[0] {
		case trace.BarrierWMB:
			writes++
		case trace.BarrierRMB:
			reads++
		case trace.BarrierMB:
			writes++
			reads++
		}
	}
	return writes, reads
}
