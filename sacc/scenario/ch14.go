package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
)

// Chapter 14, the same path on a real GPU: fences the device writes into memory
// after the work, and contexts that share the one IOMMU domain.

var _ = register(Scenario{
	Chapter: 14, Primary: true, Name: "gpu-fences",
	Summary: "GPU-style fences on SACC: after the work, a MEMCPY of a sequence number into a fence page; the process waits on that value, never on the CQ, and hands CQ slots back in bulk",
	Options: []Option{ch14SlotsOption},
	Run:     GPUFences,
})

var _ = register(Scenario{
	Chapter: 14, Name: "gpu-contexts",
	Summary: "two processes take turns on the one queue, each with its own rings and fence timeline, all in one IOMMU domain; with peek=on one reads the other's buffer through the device",
	Options: []Option{ch14PeekOption},
	Run:     GPUContexts,
})

var ch14SlotsOption = Option{Name: "slots", Doc: "where each fence command copies its sequence number from", Default: "own",
	Values: []Value{
		{"own", "a slot per sequence number, untouched until its fence has signalled"},
		{"shared", "one slot for every fence, rewritten by each (the bug)"},
	}}

var ch14PeekOption = Option{Name: "peek", Doc: "the second process copies from IOVAs it was never given", Default: "off",
	Values: values("on", "off")}

const (
	ch14Ring = 16   // entries in each process's rings
	ch14Job  = 4096 // bytes one job copies
	// ch14SlotCount is how many sequence numbers one page of slots holds: a slot
	// is reused only 512 points later, long after its fence has signalled.
	ch14SlotCount = sacc.PageSize / 8
	// ch14FenceTag marks a fence command's req_id; the low bits are its point.
	ch14FenceTag = 0xf000_0000
	ch14Wait     = 200_000 // ns a wait gives up after
)

// ch14Buffer is a buffer of the process mapped for the device: where the
// process reaches it and where the device does.
type ch14Buffer struct{ va, dma uint64 }

// ch14Channel is the SACC queue driven the way a GPU's user-mode driver drives a
// channel: commands go into a ring in the process's memory and a doorbell
// announces them (the SQ and SQ_TAIL; on NVIDIA, the GPFIFO and GP_PUT), and
// after the work comes a fence command that makes the device write a sequence
// number into a fence page. The process waits on that number, never on the
// completion queue, and hands CQ slots back in bulk once a fence says how far
// the device got, as a GPU driver frees ring space by its read pointer.
type ch14Channel struct {
	p        *kernel.Process
	fd       int
	doorbell uint64 // the mapped doorbell page
	sq, cq   uint64 // the rings, in the process's memory
	args     uint64 // a page for ioctl argument blocks

	queued  uint32 // commands written into the SQ so far
	retired uint32 // commands whose CQ slots went back to the device

	fence ch14Buffer // the fence page: the device writes 8 bytes at its start
	slots ch14Buffer // the sequence numbers fence commands copy from
	point uint64     // the last point a fence command was queued for
	// fenceCmd[point-1] is the index of that point's fence command.
	fenceCmd []uint32
	// sharedSlot makes every fence copy from slot 0 (slots=shared): the bug.
	sharedSlot bool
}

// ch14Open is the slow path, done once with system calls: open the device, map
// the doorbell page, allocate the rings, and map a fence page the device writes
// and a page of sequence-number slots it reads. The queue itself is taken later.
func ch14Open(p *kernel.Process) (*ch14Channel, error) {
	c := &ch14Channel{p: p}
	var err error
	if c.fd, err = p.Open(driver.DevPath); err != nil {
		return nil, err
	}
	if c.doorbell, err = p.Mmap(c.fd, driver.MmapDoorbell, sacc.PageSize); err != nil {
		return nil, err
	}
	if c.args, err = p.Alloc(sacc.PageSize); err != nil {
		return nil, err
	}
	if c.sq, err = p.Alloc(ch14Ring * sacc.DescriptorSize); err != nil {
		return nil, err
	}
	if c.cq, err = p.Alloc(ch14Ring * sacc.CompletionSize); err != nil {
		return nil, err
	}
	if c.fence, err = c.buffer(sacc.PageSize, kernel.DMAFromDevice); err != nil {
		return nil, fmt.Errorf("map the fence page: %w", err)
	}
	if c.slots, err = c.buffer(sacc.PageSize, kernel.DMAToDevice); err != nil {
		return nil, fmt.Errorf("map the sequence-number slots: %w", err)
	}
	return c, nil
}

// buffer allocates n bytes of the process and maps them for the device
// (MAP_BUFFER: pinned, and mapped in the IOMMU with the direction's rights).
func (c *ch14Channel) buffer(n uint64, dir kernel.Direction) (ch14Buffer, error) {
	va, err := c.p.Alloc(n)
	if err != nil {
		return ch14Buffer{}, err
	}
	driver.MapArgs{Addr: va, Length: n, Dir: dir}.Store(c.p, c.args)
	dma, err := c.p.Ioctl(c.fd, driver.IocMapBuffer, c.args)
	return ch14Buffer{va, dma}, err
}

// take hands the device's one queue to this process's rings (SETUP_RINGS), and
// maps the doorbell page again if it is gone: a queue given back revokes every
// process's mapping of it (as unmap_mapping_range does), so the page mapped at
// open may be gone by the time this process gets the queue.
func (c *ch14Channel) take() error {
	driver.RingArgs{SQ: c.sq, CQ: c.cq, Size: ch14Ring}.Store(c.p, c.args)
	if _, err := c.p.Ioctl(c.fd, driver.IocSetupRings, c.args); err != nil {
		return fmt.Errorf("take the queue: %w", err)
	}
	if c.p.Mapped(c.doorbell) {
		return nil
	}
	var err error
	if c.doorbell, err = c.p.Mmap(c.fd, driver.MmapDoorbell, sacc.PageSize); err != nil {
		return fmt.Errorf("map the doorbell page again: %w", err)
	}
	return nil
}

// give returns the queue to the kernel (RELEASE_RINGS). The file stays open, so
// the process's buffers stay mapped for the device.
func (c *ch14Channel) give() error {
	_, err := c.p.Ioctl(c.fd, driver.IocReleaseRings, 0)
	return err
}

// put writes a command into the next SQ slot; the doorbell comes later.
func (c *ch14Channel) put(d sacc.Descriptor) error {
	if c.queued-c.retired == ch14Ring-1 {
		return errors.New("channel full: wait for a fence and retire first")
	}
	var b [sacc.DescriptorSize]byte
	d.Encode(b[:])
	c.p.StoreBytes(c.sq+uint64(c.queued%ch14Ring)*sacc.DescriptorSize, b[:])
	c.queued++
	return nil
}

// signal queues a fence command for the next point: a MEMCPY of the point's
// number into the fence page. SACC runs commands one at a time in ring order,
// so that copy lands only after every command before it has finished and
// posted its completion. The number is copied from a slot of its own, which
// nothing rewrites until this fence has signalled; a GPU's fence command
// carries the value in the command itself.
func (c *ch14Channel) signal() (uint64, error) {
	point := c.point + 1
	slot := point % ch14SlotCount
	if c.sharedSlot {
		slot = 0
	}
	c.p.Store64(c.slots.va+slot*8, point)
	d := sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: c.slots.dma + slot*8, Dst: c.fence.dma, Length: 8,
		ReqID: ch14FenceTag | uint32(point)}
	if err := c.put(d); err != nil {
		return 0, err
	}
	c.point = point
	c.fenceCmd = append(c.fenceCmd, c.queued-1)
	return point, nil
}

// ring makes the commands and the sequence numbers visible, then writes the
// new tail into the mapped doorbell page.
func (c *ch14Channel) ring() {
	c.p.Kernel().CPU.WMB()
	c.p.Store32(c.doorbell+sacc.RegSQTail-sacc.DoorbellPage, c.queued%ch14Ring)
}

// wait spins on the fence page until it has reached point. Reached means
// value >= point, never ==: one fence write can pass several points. Then a read
// barrier, so that whatever the caller reads next is read after the fence was.
func (c *ch14Channel) wait(point uint64) (uint64, error) {
	cpu := c.p.Kernel().CPU
	deadline := cpu.Now() + ch14Wait
	for {
		if v := c.p.Load64(c.fence.va); v >= point {
			cpu.RMB()
			return v, nil
		}
		if cpu.Now() > deadline {
			return 0, fmt.Errorf("fence point %d not reached within %d µs", point, ch14Wait/1000)
		}
		cpu.Relax()
	}
}

// retire hands back, with one CQ_HEAD_DB store, the CQ slots of every command
// before point's fence command: the fence says they have all completed, so no
// completion entry needs reading (the fence command's own completion may
// still be on its way). It returns the range of commands retired, [from, to).
func (c *ch14Channel) retire(point uint64) (from, to uint32) {
	from, to = c.retired, c.fenceCmd[point-1]
	if to <= from {
		return from, from
	}
	c.retired = to
	c.p.Store32(c.doorbell+sacc.RegCQHeadDB-sacc.DoorbellPage, to%ch14Ring)
	return from, to
}

// status reads the status of command i's completion. Only for a retired
// command: its entry is known to be written.
func (c *ch14Channel) status(i uint32) sacc.Status {
	return sacc.Status(c.p.Load16(c.cq + uint64(i%ch14Ring)*sacc.CompletionSize + sacc.CplStatusOff))
}

// close gives the queue back and closes the file, which unmaps every buffer.
func (c *ch14Channel) close() error {
	if err := c.give(); err != nil {
		return err
	}
	return c.p.Close(c.fd)
}

// GPUFences runs copies through a process's queue the way a GPU runtime does:
// a fence after the work, waits on the fence value, CQ slots handed back in
// bulk, and the one thing a fence cannot say.
func GPUFences(m *machine.Machine, env *Env) error {
	shared := false
	switch v := env.Option("slots", "own"); v {
	case "own":
	case "shared":
		shared = true
	default:
		return fmt.Errorf("slots=%s: want own or shared", v)
	}
	cfg := host.Config{Machine: m.Config(), Kernel: kernel.Config{IOMMU: true}, Driver: driver.Config{RingSize: 8}}
	h, err := boot(m, env, cfg)
	if err != nil {
		return err
	}
	log := env.Log
	p := h.K.NewProcess("umd")
	c, err := ch14Open(p)
	if err != nil {
		return err
	}
	c.sharedSlot = shared
	if err := c.take(); err != nil {
		return err
	}
	src, err := c.buffer(ch14Job, kernel.DMAToDevice)
	if err != nil {
		return err
	}
	p.StoreBytes(src.va, bytes.Repeat([]byte("fenced "), ch14Job/7+1)[:ch14Job])
	dst, err := c.buffer(10*ch14Job, kernel.DMAFromDevice)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "channel open: %d-entry rings in the process; the fence page at user %#x is dma %#x (phys %#x); "+
		"sequence numbers are copied from dma %#x; %d system calls so far\n",
		ch14Ring, c.fence.va, c.fence.dma, ch14Phys(p, c.fence.va), c.slots.dma, p.Stats.Syscalls)
	calls := p.Stats.Syscalls

	job := func(i int) sacc.Descriptor {
		return sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: src.dma, Dst: dst.dma + uint64(i)*ch14Job, Length: ch14Job, ReqID: uint32(i + 1)}
	}
	// done reports whether job i's copy is in place: its first and last eight
	// bytes (the device writes a whole copy at once).
	done := func(i int) bool {
		base := dst.va + uint64(i)*ch14Job
		return p.Load64(base) == p.Load64(src.va) && p.Load64(base+ch14Job-8) == p.Load64(src.va+ch14Job-8)
	}
	queuedJobs := 0
	var covers []int // covers[point-1]: how many jobs were queued before that point's fence
	put := func(n int) error {
		for range n {
			if err := c.put(job(queuedJobs)); err != nil {
				return err
			}
			queuedJobs++
		}
		return nil
	}
	signal := func() (uint64, error) {
		point, err := c.signal()
		covers = append(covers, queuedJobs)
		return point, err
	}
	// waitAndLook waits for point, then checks that every job the value it found
	// stands for is in place; it returns when the fence was seen, after rung.
	waitAndLook := func(point uint64, rung sim.Time) (sim.Time, error) {
		v, err := c.wait(point)
		if err != nil {
			return 0, err
		}
		at := m.Now() - rung
		claimed := covers[min(v, c.point)-1]
		for i := range claimed {
			if !done(i) {
				fmt.Fprintf(log, "wait(%d): the fence page says %d, %d ns after the doorbell, but job %d is not in place: "+
					"the fence ran ahead of the work\n", point, v, at, i+1)
				return at, nil
			}
		}
		what := fmt.Sprintf("jobs 1 to %d are", claimed)
		switch claimed {
		case 1:
			what = "job 1 is"
		case 2:
			what = "jobs 1 and 2 are"
		}
		fmt.Fprintf(log, "wait(%d): the fence page says %d, %d ns after the doorbell; %s in place\n", point, v, at, what)
		return at, nil
	}

	// 1. A fence after every job, and one doorbell for all of them.
	for range 4 {
		if err := put(1); err != nil {
			return err
		}
		if _, err := signal(); err != nil {
			return err
		}
	}
	rung := m.Now()
	c.ring()
	var fencePerJob sim.Time
	for point := uint64(1); point <= 4; point++ {
		if fencePerJob, err = waitAndLook(point, rung); err != nil {
			return err
		}
	}
	from, to := c.retire(4)
	fmt.Fprintf(log, "CQ_HEAD_DB = %d: the CQ slots of the %d commands before fence 4 go back in one store; no completion was read\n",
		to%ch14Ring, to-from)

	// 2. One fence for a batch of four jobs.
	if err := put(4); err != nil {
		return err
	}
	point, err := signal()
	if err != nil {
		return err
	}
	rung = m.Now()
	c.ring()
	oneFence, err := waitAndLook(point, rung)
	if err != nil {
		return err
	}
	if shared {
		fmt.Fprintf(log, "every fence copied its number from the same slot, so the waits returned before the work was done\n")
	} else {
		fmt.Fprintf(log, "4 jobs and 1 fence: %d ns from the doorbell to the fence; 4 jobs and 4 fences: %d ns. "+
			"On SACC a fence is a command like any other: %d ns each\n", oneFence, fencePerJob, (fencePerJob-oneFence)/3)
	}
	c.retire(point)

	// 3. A point the fence has already passed costs one look.
	start := m.Now()
	v, err := c.wait(3)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "wait(3) now: the page says %d, a point already passed: one load and a read barrier, %d ns\n", v, m.Now()-start)

	// 4. A job that fails, and the fence after it.
	bad := job(queuedJobs)
	bad.Src = src.va // the classic slip: the user address where the DMA address belongs
	if err := c.put(bad); err != nil {
		return err
	}
	queuedJobs++
	if err := put(1); err != nil {
		return err
	}
	if point, err = signal(); err != nil {
		return err
	}
	rung = m.Now()
	c.ring()
	if _, err := c.wait(point); err != nil {
		return err
	}
	fmt.Fprintf(log, "wait(%d): the fence page says %d, %d ns after the doorbell; job 9 in place: %v; job 10 in place: %v\n",
		point, point, m.Now()-rung, done(8), done(9))
	from, to = c.retire(point)
	reads := 0
	for i := from; i < to; i++ {
		reads++
		if st := c.status(i); st != sacc.StatusOK {
			fmt.Fprintf(log, "the fence cannot tell a failed job from a finished one; the completion can: CQ slot %d (job 9) says "+
				"status %d, %s: it named its source by the user address %#x\n", i%ch14Ring, uint16(st), st, bad.Src)
		}
	}
	fmt.Fprintf(log, "%d jobs, %d fence points, %d commands, %d system calls; the CPU read %d completions, only to look for errors\n",
		queuedJobs, c.point, c.queued, p.Stats.Syscalls-calls, reads)
	return c.close()
}

// ch14Weights is what the first process keeps in its buffer.
var ch14Weights = []byte("weights of train, layer 0: 0.12 -0.57 0.33 0.98")

// ch14Probes is how many IOVA pages the second process tries with peek=on.
const ch14Probes = 12

// GPUContexts runs two processes on the device, one after the other on its one
// queue: each has its own rings and fence timeline, and both their buffers sit
// in the one IOMMU domain the kernel keeps for the device. With peek=on the
// second copies from IOVAs it was never given.
func GPUContexts(m *machine.Machine, env *Env) error {
	peek := false
	switch v := env.Option("peek", "off"); v {
	case "off":
	case "on":
		peek = true
	default:
		return fmt.Errorf("peek=%s: want on or off", v)
	}
	cfg := host.Config{Machine: m.Config(), Kernel: kernel.Config{IOMMU: true}, Driver: driver.Config{RingSize: 8}}
	h, err := boot(m, env, cfg)
	if err != nil {
		return err
	}
	log := env.Log

	// train: one job with its fence.
	train := h.K.NewProcess("train")
	a, err := ch14Open(train)
	if err != nil {
		return err
	}
	if err := a.take(); err != nil {
		return err
	}
	weights, err := a.buffer(sacc.PageSize, kernel.DMAToDevice)
	if err != nil {
		return err
	}
	train.StoreBytes(weights.va, ch14Weights)
	out, err := a.buffer(sacc.PageSize, kernel.DMAFromDevice)
	if err != nil {
		return err
	}
	if err := a.put(sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: weights.dma, Dst: out.dma, Length: uint32(len(ch14Weights)), ReqID: 1}); err != nil {
		return err
	}
	if _, err := a.signal(); err != nil {
		return err
	}
	a.ring()
	if _, err := a.wait(1); err != nil {
		return err
	}
	fmt.Fprintf(log, "train (pid %d): its weights at user %#x are dma %#x; one job, and its fence page says 1\n",
		train.PID, weights.va, weights.dma)

	// chat opens the device and maps its buffers while train still holds the queue.
	chat := h.K.NewProcess("chat")
	b, err := ch14Open(chat)
	if err != nil {
		return err
	}
	input, err := b.buffer(sacc.PageSize, kernel.DMAToDevice)
	if err != nil {
		return err
	}
	chat.StoreBytes(input.va, []byte("a question for chat"))
	answer, err := b.buffer(sacc.PageSize, kernel.DMAFromDevice)
	if err != nil {
		return err
	}
	trainPhys, chatPhys := ch14Phys(train, weights.va), ch14Phys(chat, input.va)
	fmt.Fprintf(log, "chat (pid %d): its input at user %#x, the same user address as train's weights, is another page "+
		"(phys %#x, not %#x): the CPU's page tables keep the two processes apart\n", chat.PID, input.va, chatPhys, trainPhys)

	// The one queue goes from train to chat.
	start := m.Now()
	if err := a.give(); err != nil {
		return err
	}
	if err := b.take(); err != nil {
		return err
	}
	fmt.Fprintf(log, "the queue goes from train to chat in %d ns: two system calls, each of which disables and enables the device, "+
		"and only because train's queue was idle\n",
		m.Now()-start)
	if err := b.put(sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: input.dma, Dst: answer.dma, Length: 64, ReqID: 1}); err != nil {
		return err
	}
	if _, err := b.signal(); err != nil {
		return err
	}
	b.ring()
	if _, err := b.wait(1); err != nil {
		return err
	}
	fmt.Fprintf(log, "chat: one job, and its own fence page says 1: every context has a timeline of its own\n")
	fmt.Fprintf(log, "the one IOMMU domain maps %d pages for the device: the kernel's rings and both processes' buffers, "+
		"train's weights at dma %#x and chat's input at dma %#x; nothing in it says whose a page is\n",
		h.K.IOMMUMappings(), weights.dma, input.dma)

	if peek {
		if err := ch14Peek(log, b, answer); err != nil {
			return err
		}
	}
	if err := b.close(); err != nil {
		return err
	}
	return train.Close(a.fd)
}

// ch14Peek has chat copy the first 64 bytes of each of the first IOVA pages into
// its own buffer. The device checks a descriptor's addresses only through the
// IOMMU, and the IOMMU knows one domain for the whole device.
func ch14Peek(log io.Writer, b *ch14Channel, into ch14Buffer) error {
	first := b.queued
	for i := range ch14Probes {
		iova := kernel.IOVABase + uint64(i)*sacc.PageSize
		d := sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: iova, Dst: into.dma + uint64(i)*64, Length: 64, ReqID: uint32(0x100 + i)}
		if err := b.put(d); err != nil {
			return err
		}
	}
	point, err := b.signal()
	if err != nil {
		return err
	}
	b.ring()
	if _, err := b.wait(point); err != nil {
		return err
	}
	b.retire(point)
	failed, found := 0, uint64(0)
	for i := range uint32(ch14Probes) {
		if b.status(first+i) != sacc.StatusOK {
			failed++
			continue
		}
		got := make([]byte, len(ch14Weights))
		b.p.LoadBytes(into.va+uint64(i)*64, got)
		if bytes.Equal(got, ch14Weights) {
			found = kernel.IOVABase + uint64(i)*sacc.PageSize
		}
	}
	fmt.Fprintf(log, "peek: chat copied from the %d pages from dma %#x on: %d failed with status 2 (bad address), %d copied\n",
		ch14Probes, uint64(kernel.IOVABase), failed, ch14Probes-failed)
	if found == 0 {
		fmt.Fprintf(log, "peek: none of them held train's weights\n")
		return nil
	}
	got := make([]byte, len(ch14Weights))
	b.p.LoadBytes(into.va+(found-kernel.IOVABase)/sacc.PageSize*64, got)
	fmt.Fprintf(log, "peek: at dma %#x chat read %q: train's weights, through the device; that copy ended with status OK\n", found, got)
	return nil
}

// ch14Phys is the physical page behind a user address, found by pinning it for
// a moment (as the kernel would; no cost, no trace).
func ch14Phys(p *kernel.Process, va uint64) uint64 {
	sg, err := p.PinUserPages(va, 1)
	if err != nil {
		return 0
	}
	p.UnpinUserPages(sg)
	return sg[0].Phys
}
