package scenario

import (
	"errors"
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
)

// Chapter 10, kernel bypass: walking around the house, straight to the garage.

var _ = register(Scenario{
	Chapter: 10, Primary: true, Name: "bypass-tour",
	Summary: "kernel bypass step by step: only the doorbell page mapped, rings in the process, the v0.1 CQ_HEAD gap and v1's CQ_HEAD_DB, NOPs with and without system calls",
	Quirks:  []quirk.Quirk{quirk.MapRegisterPage},
	Run:     BypassTour,
})

// ch10Ring is the size of the process's own rings.
const ch10Ring = 16

// ch10Queue is a process's queue written out by hand, as a user-space library
// would: every access is a load or a store of the process, none is a system
// call. (sacc/user is the same thing as a library.)
type ch10Queue struct {
	p              *kernel.Process
	doorbell       uint64 // the mapped doorbell page
	sq, cq         uint64 // the rings, in the process's memory
	sqTail, cqHead uint32
	phase          uint8
	nextID         uint32
}

// put writes a NOP descriptor into the next SQ slot (no doorbell yet).
func (q *ch10Queue) put() {
	var d [sacc.DescriptorSize]byte
	sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: q.nextID}.Encode(d[:])
	q.p.StoreBytes(q.sq+uint64(q.sqTail)*sacc.DescriptorSize, d[:])
	q.nextID++
	q.sqTail = (q.sqTail + 1) % ch10Ring
}

// ring makes the descriptors visible, then writes SQ_TAIL through the mapped page.
func (q *ch10Queue) ring() {
	q.p.Kernel().CPU.WMB()
	q.p.Store32(q.doorbell+sacc.RegSQTail-sacc.DoorbellPage, q.sqTail)
}

// poll consumes one completion if there is a new one. With giveBack it returns
// the slot to the device through CQ_HEAD_DB (v1); without, it behaves as a v0.1
// process must: it has no way to reach CQ_HEAD, which lives on the register page.
func (q *ch10Queue) poll(giveBack bool) bool {
	slot := q.cq + uint64(q.cqHead)*sacc.CompletionSize
	if uint8(q.p.Load16(slot+sacc.CplPhaseOff)&sacc.CplPhaseBit) != q.phase {
		return false
	}
	q.p.Kernel().CPU.RMB()
	if q.cqHead++; q.cqHead == ch10Ring {
		q.cqHead, q.phase = 0, q.phase^1
	}
	q.p.TraceDriverCQ(q.cqHead, q.phase)
	if giveBack {
		q.p.Store32(q.doorbell+sacc.RegCQHeadDB-sacc.DoorbellPage, q.cqHead)
	}
	return true
}

// wait spins until n completions arrived or limit ns passed; it returns how many.
func (q *ch10Queue) wait(n int, giveBack bool, limit uint64) int {
	c := q.p.Kernel().CPU
	deadline := uint64(c.Now()) + limit
	got := 0
	for got < n && uint64(c.Now()) <= deadline {
		if q.poll(giveBack) {
			got++
			continue
		}
		c.Relax()
	}
	return got
}

// BypassTour takes the device's queue into a process and drives it from there.
func BypassTour(m *machine.Machine, env *Env) error {
	cfg := host.Config{Machine: m.Config(), Kernel: kernel.Config{IOMMU: true}, Driver: driver.Config{RingSize: 8}}
	h, err := boot(m, env, cfg)
	if err != nil {
		return err
	}
	log := env.Log
	p := h.K.NewProcess("app")
	fd, err := p.Open(driver.DevPath)
	if err != nil {
		return err
	}

	// 1. What may be mapped: not the register page, only the doorbell page.
	regs, err := p.Mmap(fd, sacc.RegisterPage, sacc.PageSize)
	if err != nil {
		fmt.Fprintf(log, "mmap(/dev/sacc0, offset 0x0): %v: the register page stays in the kernel\n", err)
	} else {
		fmt.Fprintf(log, "mmap(/dev/sacc0, offset 0x0) succeeded at %#x: this process can reach CTRL and the ring registers\n", regs)
	}
	q := &ch10Queue{p: p, phase: 1}
	if q.doorbell, err = p.Mmap(fd, driver.MmapDoorbell, sacc.PageSize); err != nil {
		return err
	}
	fmt.Fprintf(log, "mmap(/dev/sacc0, offset 0x1000): the doorbell page at user address %#x\n", q.doorbell)

	// 2. The rings live in the process's memory; the driver pins and maps them
	// and points the device at them.
	if q.sq, err = p.Alloc(ch10Ring * sacc.DescriptorSize); err != nil {
		return err
	}
	if q.cq, err = p.Alloc(ch10Ring * sacc.CompletionSize); err != nil {
		return err
	}
	args, err := p.Alloc(sacc.PageSize)
	if err != nil {
		return err
	}
	driver.RingArgs{SQ: q.sq, CQ: q.cq, Size: ch10Ring}.Store(p, args)
	if _, err := p.Ioctl(fd, driver.IocSetupRings, args); err != nil {
		return err
	}
	fmt.Fprintf(log, "ioctl(SETUP_RINGS): the device now reads SQ %#x and writes CQ %#x, %d entries each; %d system calls so far\n",
		q.sq, q.cq, ch10Ring, p.Stats.Syscalls)
	p.TraceDriverCQ(q.cqHead, q.phase)

	// 3. v0.1: the process consumes completions but cannot hand the slots back.
	calls := p.Stats.Syscalls
	for range ch10Ring - 1 {
		q.put()
	}
	q.ring()
	got := q.wait(ch10Ring-1, false, 200_000)
	fmt.Fprintf(log, "v0.1 rules: %d NOPs submitted and %d completions seen, CQ_HEAD never written\n", ch10Ring-1, got)
	for range 5 {
		q.put()
	}
	q.ring()
	got = q.wait(5, false, 20_000)
	cq := h.M.Device().State()
	fmt.Fprintf(log, "v0.1 rules: 5 more NOPs, %d completions in 20 µs: the device sees a full CQ (tail %d, head %d) and stalls\n",
		got, cq.CQTail, cq.CQHead)

	// 4. v1: CQ_HEAD_DB sits on the doorbell page, so the process can write it.
	p.Store32(q.doorbell+sacc.RegCQHeadDB-sacc.DoorbellPage, q.cqHead)
	got = q.wait(5, true, 200_000)
	fmt.Fprintf(log, "v1: CQ_HEAD_DB = %d written from user space: the device resumes, %d of 5 completions arrive; system calls: %d\n",
		(ch10Ring-1)%ch10Ring, got, p.Stats.Syscalls-calls)

	// 5. The fast path, timed: one NOP at a time, no system call.
	const jobs = 8
	calls, start := p.Stats.Syscalls, m.Now()
	for range jobs {
		q.put()
		q.ring()
		if q.wait(1, true, 200_000) != 1 {
			return errors.New("bypass NOP did not complete")
		}
	}
	bypassNS, bypassCalls := (m.Now()-start)/jobs, p.Stats.Syscalls-calls
	fmt.Fprintf(log, "bypass: %d ns per NOP, %d system calls for %d NOPs\n", bypassNS, bypassCalls, jobs)

	// 6. Give the queue back; the same NOPs through ioctl.
	if _, err := p.Ioctl(fd, driver.IocReleaseRings, 0); err != nil {
		return err
	}
	driver.SubmitArgs{Opcode: sacc.OpNOP}.Store(p, args)
	calls, start = p.Stats.Syscalls, m.Now()
	for range jobs {
		if _, err := p.Ioctl(fd, driver.IocSubmit, args); err != nil {
			return err
		}
	}
	kernelNS, kernelCalls := (m.Now()-start)/jobs, p.Stats.Syscalls-calls
	fmt.Fprintf(log, "kernel path: %d ns per NOP, %d system calls for %d NOPs\n", kernelNS, kernelCalls, jobs)

	// What a mapped register page allows (only with quirk map-register-page).
	if regs != 0 {
		fmt.Fprintf(log, "through the register page the process reads SQ_BASE %#x; now it writes 0 to CTRL\n",
			uint64(p.Load32(regs+sacc.RegSQBaseLo))|uint64(p.Load32(regs+sacc.RegSQBaseHi))<<32)
		p.Store32(regs+sacc.RegCTRL, 0)
		if _, err := p.Ioctl(fd, driver.IocSubmit, args); err != nil {
			fmt.Fprintf(log, "the next ioctl for anyone: %v\n", err)
		}
	}
	_ = quirk.MapRegisterPage // the quirk that lets the first mmap succeed
	return p.Close(fd)
}
