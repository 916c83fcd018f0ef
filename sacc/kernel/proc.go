package kernel

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Errno is the error a system call returns, numbered as Linux numbers them.
type Errno uint8

// Errors system calls return.
const (
	EPERM  Errno = 1  // operation not permitted
	ENOENT Errno = 2  // no such file or device
	EIO    Errno = 5  // input/output error
	EBADF  Errno = 9  // bad file descriptor
	EAGAIN Errno = 11 // try again
	ENOMEM Errno = 12 // out of memory
	EBUSY  Errno = 16 // device or resource busy
	EINVAL Errno = 22 // invalid argument
)

var errnoText = map[Errno]string{
	EPERM: "EPERM: operation not permitted", ENOENT: "ENOENT: no such file or device",
	EIO: "EIO: input/output error", EBADF: "EBADF: bad file descriptor", EAGAIN: "EAGAIN: try again",
	ENOMEM: "ENOMEM: out of memory", EBUSY: "EBUSY: device or resource busy", EINVAL: "EINVAL: invalid argument",
}

func (e Errno) Error() string {
	if s, ok := errnoText[e]; ok {
		return s
	}
	return fmt.Sprintf("errno %d", uint8(e))
}

// userBase is where a process's mappings start.
const userBase = 0x7F00_0000_0000

// FileOps is what a character device implements (struct file_operations).
type FileOps interface {
	Open(f *File) error
	Ioctl(f *File, cmd uint32, arg uint64) (uint64, error)
	// Mmap returns the physical pages to map for [offset, offset+length) of the
	// device, and whether they are device memory (MMIO, mapped uncached).
	Mmap(f *File, offset, length uint64) (phys []uint64, mmio bool, err error)
	Poll(f *File) bool // readable: a completion is waiting
	Release(f *File)
}

// File is an open file (struct file).
type File struct {
	Ops     FileOps
	Proc    *Process
	Private any // the driver's per-open state
}

// RegisterChrdev makes a device node path (such as /dev/sacc0) open ops.
func (k *Kernel) RegisterChrdev(path string, ops FileOps) { k.files[path] = ops }

// UnregisterChrdev removes a device node.
func (k *Kernel) UnregisterChrdev(path string) { delete(k.files, path) }

// vma is one mmap of a device file: the process's address, and which pages of
// which device it shows.
type vma struct {
	va, offset, length uint64
	ops                FileOps
}

type pte struct {
	phys uint64
	mmio bool
	pin  int
}

// Process is a user process: an address space, open files and counters.
type Process struct {
	k     *Kernel
	PID   int
	Name  string
	pages map[uint64]*pte // virtual page → mapping
	vmas  []vma           // the mmaps of device files, for UnmapMappingRange
	next  uint64
	fds   []*File
	Stats ProcStats
}

// ProcStats counts what crossing into the kernel cost a process.
type ProcStats struct {
	Syscalls   uint64
	SyscallsBy [8]uint64 // by trace.Sys* number
	KernelTime sim.Time
}

// Segfault is a user access to an address the process has not mapped. The process
// cannot go on from it: as SIGSEGV's default action kills a process, the access
// stops the run (sim.Stop) with the *Segfault as the reason, before anything
// reaches the CPU, and errors.As finds it in what sim.Run returns. A harness that
// expects a fault (a test probing an address) runs the access under its own
// sim.Run, as a signal handler would catch it.
type Segfault struct{ Addr uint64 }

func (s *Segfault) Error() string { return fmt.Sprintf("segmentation fault at %#x", s.Addr) }

// NewProcess starts a process.
func (k *Kernel) NewProcess(name string) *Process {
	p := &Process{k: k, PID: 100 + len(k.procs), Name: name, pages: map[uint64]*pte{}, next: userBase}
	k.procs = append(k.procs, p)
	return p
}

// Kernel is the process's kernel.
func (p *Process) Kernel() *Kernel { return p.k }

// TraceDriverCQ is the tracepoint of a completion consumer's bookkeeping: the
// CQ slot it looks at next and the phase it expects there (§7.2), which only
// it knows. A driver hits it when its queue starts and after every completion it
// consumes, so that a picture of the ring can show the driver's side honestly,
// bugs included.
func (k *Kernel) TraceDriverCQ(head uint32, phase uint8) {
	k.CPU.Tracepoint(func(tr *trace.Tracer) { tr.EmitDriverCQ(uint64(head), uint64(phase)) })
}

// TraceDriverCQ is the same tracepoint for a process that consumes completions
// itself (kernel bypass).
func (p *Process) TraceDriverCQ(head uint32, phase uint8) { p.k.TraceDriverCQ(head, phase) }

// mapped records one page of the address space in the trace.
func (p *Process) mapped(va, phys uint64, mmio bool) {
	m := uint64(0)
	if mmio {
		m = 1
	}
	p.k.M.Tracer().EmitProcMap(uint64(p.PID), va, phys, m)
}

// syscall charges one kernel crossing and records it.
func (p *Process) syscall(nr uint64, a0 uint64, body func() (uint64, error)) (uint64, error) {
	k := p.k
	p.Stats.Syscalls++
	p.Stats.SyscallsBy[nr]++
	k.Stats.Syscalls++
	k.Stats.KernelCrossing++
	start := k.M.Now()
	k.CPU.Delay(k.M.Cost().Syscall / 2) // entry
	ret, err := body()
	k.CPU.Delay(k.M.Cost().Syscall - k.M.Cost().Syscall/2) // exit
	p.Stats.KernelTime += k.M.Now() - start
	r := ret
	if err != nil {
		r = ^uint64(0)
	}
	k.M.Tracer().EmitSyscall(nr, a0, r)
	return ret, err
}

// Open is open(2).
func (p *Process) Open(path string) (int, error) {
	fd, err := p.syscall(trace.SysOpen, 0, func() (uint64, error) {
		ops, ok := p.k.files[path]
		if !ok {
			return 0, fmt.Errorf("open %s: %w", path, ENOENT)
		}
		f := &File{Ops: ops, Proc: p}
		if err := ops.Open(f); err != nil {
			return 0, fmt.Errorf("open %s: %w", path, err)
		}
		p.fds = append(p.fds, f)
		return uint64(len(p.fds) - 1), nil
	})
	return int(fd), err
}

func (p *Process) file(fd int) (*File, error) {
	if fd < 0 || fd >= len(p.fds) || p.fds[fd] == nil {
		return nil, EBADF
	}
	return p.fds[fd], nil
}

// Ioctl is ioctl(2).
func (p *Process) Ioctl(fd int, cmd uint32, arg uint64) (uint64, error) {
	return p.syscall(trace.SysIoctl, uint64(cmd), func() (uint64, error) {
		f, err := p.file(fd)
		if err != nil {
			return 0, err
		}
		return f.Ops.Ioctl(f, cmd, arg)
	})
}

// Poll is poll(2) on one descriptor: it reports whether the file is readable,
// sleeping (the CPU idles, interrupts run) up to timeout.
func (p *Process) Poll(fd int, timeout sim.Time) (bool, error) {
	r, err := p.syscall(trace.SysPoll, uint64(fd), func() (uint64, error) {
		f, err := p.file(fd)
		if err != nil {
			return 0, err
		}
		deadline := p.k.M.Now() + timeout
		for {
			if f.Ops.Poll(f) {
				return 1, nil
			}
			if p.k.M.Now() >= deadline {
				return 0, nil
			}
			p.k.CPU.Idle(deadline)
		}
	})
	return r == 1, err
}

// Close is close(2).
func (p *Process) Close(fd int) error {
	_, err := p.syscall(trace.SysClose, uint64(fd), func() (uint64, error) {
		f, err := p.file(fd)
		if err != nil {
			return 0, err
		}
		f.Ops.Release(f)
		p.fds[fd] = nil
		return 0, nil
	})
	return err
}

// Mmap is mmap(2) of a device file: the driver picks the pages, the kernel puts
// them in the process's address space.
func (p *Process) Mmap(fd int, offset, length uint64) (uint64, error) {
	return p.syscall(trace.SysMmap, offset, func() (uint64, error) {
		f, err := p.file(fd)
		if err != nil {
			return 0, err
		}
		if length == 0 || offset%sacc.PageSize != 0 {
			return 0, EINVAL
		}
		phys, mmio, err := f.Ops.Mmap(f, offset, pageRound(length))
		if err != nil {
			return 0, err
		}
		va := p.next
		for i, ph := range phys {
			p.pages[va+uint64(i)*sacc.PageSize] = &pte{phys: ph, mmio: mmio}
			p.mapped(va+uint64(i)*sacc.PageSize, ph, mmio)
		}
		p.vmas = append(p.vmas, vma{va: va, offset: offset, length: uint64(len(phys)) * sacc.PageSize, ops: f.Ops})
		p.next += uint64(len(phys))*sacc.PageSize + sacc.PageSize // a guard page between mappings
		return va, nil
	})
}

// Alloc is anonymous memory (malloc backed by mmap): n bytes of zeroed pages.
// The pages are allocated one by one, so a large buffer is physically scattered,
// as user memory is.
func (p *Process) Alloc(n uint64) (uint64, error) {
	return p.syscall(trace.SysMmap, 0, func() (uint64, error) {
		va := p.next
		for off := uint64(0); off < pageRound(n); off += sacc.PageSize {
			ph, err := p.k.AllocPages(sacc.PageSize)
			if err != nil {
				for o := uint64(0); o < off; o += sacc.PageSize { // undo the pages taken so far
					p.k.FreePages(p.pages[va+o].phys, sacc.PageSize)
					delete(p.pages, va+o)
				}
				return 0, ENOMEM
			}
			// Take one page in between for someone else, so neighbours differ.
			if spacer, err := p.k.AllocPages(sacc.PageSize); err == nil {
				defer p.k.FreePages(spacer, sacc.PageSize)
			}
			p.pages[va+off] = &pte{phys: ph}
			p.mapped(va+off, ph, false)
		}
		p.next += pageRound(n) + sacc.PageSize
		return va, nil
	})
}

// Mapped reports whether the page of va is in the process's address space, as a
// process learns from /proc/self/maps: a mapping the kernel revoked is gone.
func (p *Process) Mapped(va uint64) bool {
	_, ok := p.pages[va&^sacc.PageMask]
	return ok
}

// translate finds what backs a user virtual address; an unmapped one stops the
// run with a *Segfault.
func (p *Process) translate(va uint64) (phys uint64, mmio bool) {
	e, ok := p.pages[va&^sacc.PageMask]
	if !ok {
		sim.Stop(&Segfault{va})
	}
	return e.phys | va&sacc.PageMask, e.mmio
}

// Load32 … StoreBytes are the process's own memory accesses, through its page
// table. Device memory is accessed uncached with plain (relaxed) stores, so user
// code needs its own barriers, exactly as on real hardware.
func (p *Process) Load32(va uint64) uint32 {
	ph, mmio := p.translate(va)
	if mmio {
		return p.k.CPU.Readl(ph)
	}
	return p.k.CPU.Load32(ph)
}

// Load16 reads 16 bits of user memory.
func (p *Process) Load16(va uint64) uint16 {
	ph, _ := p.translate(va)
	return p.k.CPU.Load16(ph)
}

// Load64 reads 64 bits of user memory.
func (p *Process) Load64(va uint64) uint64 {
	ph, _ := p.translate(va)
	return p.k.CPU.Load64(ph)
}

// Store32 writes 32 bits; to a mapped device page it is a relaxed MMIO write.
func (p *Process) Store32(va uint64, v uint32) {
	ph, mmio := p.translate(va)
	if mmio {
		p.k.CPU.WritelRelaxed(ph, v)
		return
	}
	p.k.CPU.Store32(ph, v)
}

// Store16 writes 16 bits of user memory.
func (p *Process) Store16(va uint64, v uint16) {
	ph, _ := p.translate(va)
	p.k.CPU.Store16(ph, v)
}

// Store64 writes 64 bits of user memory.
func (p *Process) Store64(va uint64, v uint64) {
	ph, _ := p.translate(va)
	p.k.CPU.Store64(ph, v)
}

// StoreBytes copies b into user memory (memcpy).
func (p *Process) StoreBytes(va uint64, b []byte) {
	for len(b) > 0 {
		n := min(uint64(len(b)), sacc.PageSize-va&sacc.PageMask)
		ph, _ := p.translate(va)
		p.k.CPU.StoreBytes(ph, b[:n])
		b, va = b[n:], va+n
	}
}

// LoadBytes copies user memory into b.
func (p *Process) LoadBytes(va uint64, b []byte) {
	for len(b) > 0 {
		n := min(uint64(len(b)), sacc.PageSize-va&sacc.PageMask)
		ph, _ := p.translate(va)
		p.k.CPU.LoadBytes(ph, b[:n])
		b, va = b[n:], va+n
	}
}

// PinUserPages is pin_user_pages: look up and pin the physical pages behind
// [va, va+n) so they cannot move while a device uses them; it returns them as a
// scatterlist (first piece may start mid-page, last may end mid-page).
func (p *Process) PinUserPages(va, n uint64) ([]SG, error) {
	var sg []SG
	for n > 0 {
		e, ok := p.pages[va&^sacc.PageMask]
		if !ok || e.mmio {
			for _, s := range sg {
				p.unpin(s.Phys)
			}
			return nil, fmt.Errorf("pin_user_pages %#x: %w", va, EINVAL)
		}
		e.pin++
		chunk := min(n, sacc.PageSize-va&sacc.PageMask)
		sg = append(sg, SG{Phys: e.phys | va&sacc.PageMask, Len: chunk})
		va, n = va+chunk, n-chunk
	}
	return sg, nil
}

func (p *Process) unpin(phys uint64) {
	for _, e := range p.pages {
		if e.phys == phys&^sacc.PageMask && e.pin > 0 {
			e.pin--
			return
		}
	}
}

// UnpinUserPages releases pages pinned by PinUserPages.
func (p *Process) UnpinUserPages(sg []SG) {
	for _, s := range sg {
		p.unpin(s.Phys)
	}
}

// Pinned counts the process's pinned pages.
func (p *Process) Pinned() int {
	n := 0
	for _, e := range p.pages {
		if e.pin > 0 {
			n++
		}
	}
	return n
}

// UnmapMappingRange is unmap_mapping_range for a device file: every process's
// mapping of ops's pages in [offset, offset+length) loses its page-table
// entries, so that the next access faults (a *Segfault) instead of reaching the
// device. A driver calls it before the pages it let processes map change hands:
// when the device is reset, when a process gives the queue back, and on remove.
// It returns how many pages it unmapped.
func (k *Kernel) UnmapMappingRange(ops FileOps, offset, length uint64) int {
	n := 0
	for _, p := range k.procs {
		for _, m := range p.vmas {
			if m.ops != ops {
				continue
			}
			for off := uint64(0); off < m.length; off += sacc.PageSize {
				if dev := m.offset + off; dev >= offset && dev < offset+length {
					if _, ok := p.pages[m.va+off]; ok {
						delete(p.pages, m.va+off)
						n++
					}
				}
			}
		}
	}
	return n
}
