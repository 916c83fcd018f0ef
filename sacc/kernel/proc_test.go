package kernel_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/host/hosttest"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

func open(t *testing.T, p *kernel.Process) int {
	t.Helper()
	fd, err := p.Open(driver.DevPath)
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

func alloc(t *testing.T, p *kernel.Process, n uint64) uint64 {
	t.Helper()
	va, err := p.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	return va
}

// physOf is the physical address behind a user address (through a pin).
func physOf(t *testing.T, p *kernel.Process, va uint64) uint64 {
	t.Helper()
	sg, err := p.PinUserPages(va, 1)
	if err != nil {
		t.Fatal(err)
	}
	p.UnpinUserPages(sg)
	return sg[0].Phys
}

func TestNewProcess(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	a, b := h.K.NewProcess("a"), h.K.NewProcess("b")
	if a.PID == b.PID || a.Name != "a" || b.Name != "b" || a.Kernel() != h.K {
		t.Fatalf("processes %d %q, %d %q", a.PID, a.Name, b.PID, b.Name)
	}
	if a.Stats != (kernel.ProcStats{}) || a.Pinned() != 0 {
		t.Fatal("a new process has history")
	}
}

func TestOpenOfAnUnknownPathIsENOENT(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	p := h.K.NewProcess("t")
	for _, path := range []string{"/dev/sacc1", "", "/dev/null", driver.DevPath + "/"} {
		fd, err := p.Open(path)
		if !errors.Is(err, kernel.ENOENT) {
			t.Errorf("Open(%q) = %d, %v; want ENOENT", path, fd, err)
		}
		if err != nil && !strings.Contains(err.Error(), path) {
			t.Errorf("error %q does not name the path", err)
		}
	}
	h.K.UnregisterChrdev(driver.DevPath)
	if _, err := p.Open(driver.DevPath); !errors.Is(err, kernel.ENOENT) {
		t.Errorf("Open of an unregistered node: %v", err)
	}
}

func TestSystemCallsOnABadFileDescriptorAreEBADF(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	p := h.K.NewProcess("t")
	closed := open(t, p)
	if err := p.Close(closed); err != nil {
		t.Fatal(err)
	}
	for _, fd := range []int{-1, closed, 1, 99} {
		calls := map[string]func() error{
			"ioctl": func() error { _, err := p.Ioctl(fd, driver.IocReleaseRings, 0); return err },
			"close": func() error { return p.Close(fd) },
			"poll":  func() error { _, err := p.Poll(fd, 0); return err },
			"mmap":  func() error { _, err := p.Mmap(fd, driver.MmapDoorbell, pg); return err },
		}
		for name, call := range calls {
			if err := call(); !errors.Is(err, kernel.EBADF) {
				t.Errorf("%s(fd %d) = %v, want EBADF", name, fd, err)
			}
		}
	}
}

// TestEverySystemCallCountsOnce checks each call is one kernel crossing: one count
// in the process and the kernel, at least the syscall cost of virtual time, and
// one trace.Syscall event with its number, first argument and result.
func TestEverySystemCallCountsOnce(t *testing.T) {
	type setup struct {
		p   *kernel.Process
		fd  int
		buf uint64
	}
	for _, tc := range []struct {
		name string
		nr   uint64
		a0   func(s setup) uint64
		call func(s setup) (uint64, error)
		fail bool
	}{
		{"open", trace.SysOpen, nil, func(s setup) (uint64, error) { fd, err := s.p.Open(driver.DevPath); return uint64(fd), err }, false},
		{"open ENOENT", trace.SysOpen, nil, func(s setup) (uint64, error) { _, err := s.p.Open("/dev/nope"); return 0, err }, true},
		{"ioctl EBADF", trace.SysIoctl, func(setup) uint64 { return uint64(driver.IocSubmit) }, func(s setup) (uint64, error) { return s.p.Ioctl(42, driver.IocSubmit, 0) }, true},
		{"ioctl unknown command", trace.SysIoctl, func(setup) uint64 { return 0x1234 }, func(s setup) (uint64, error) { return s.p.Ioctl(s.fd, 0x1234, 0) }, true},
		{"ioctl submit", trace.SysIoctl, func(setup) uint64 { return uint64(driver.IocSubmit) }, func(s setup) (uint64, error) { return s.p.Ioctl(s.fd, driver.IocSubmit, s.buf) }, false},
		{"mmap doorbell", trace.SysMmap, func(setup) uint64 { return driver.MmapDoorbell }, func(s setup) (uint64, error) { return s.p.Mmap(s.fd, driver.MmapDoorbell, pg) }, false},
		{"mmap EINVAL", trace.SysMmap, func(setup) uint64 { return 0x1001 }, func(s setup) (uint64, error) { return s.p.Mmap(s.fd, 0x1001, pg) }, true},
		{"alloc", trace.SysMmap, nil, func(s setup) (uint64, error) { return s.p.Alloc(3 * pg) }, false},
		{"poll", trace.SysPoll, func(s setup) uint64 { return uint64(s.fd) }, func(s setup) (uint64, error) { _, err := s.p.Poll(s.fd, 5_000); return 0, err }, false},
		{"close", trace.SysClose, func(s setup) uint64 { return uint64(s.fd) }, func(s setup) (uint64, error) { return 0, s.p.Close(s.fd) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hosttest.Boot(t, host.Config{})
			p := h.K.NewProcess("t")
			s := setup{p: p, fd: open(t, p)}
			// A ready IocSubmit block: a NOP.
			s.buf = alloc(t, p, driver.SubmitArgsSize)
			pStats, kStats := p.Stats, h.K.Stats
			evs := record(t, h, trace.Syscall)
			start := h.M.Now()
			ret, err := tc.call(s)
			elapsed := h.M.Now() - start
			if (err != nil) != tc.fail {
				t.Fatalf("call: %d, %v", ret, err)
			}
			cost := h.M.Cost().Syscall
			if cost == 0 {
				t.Fatal("zero syscall cost")
			}
			if elapsed < cost {
				t.Errorf("took %d ns of virtual time, less than the syscall cost %d", elapsed, cost)
			}
			if got := p.Stats.KernelTime - pStats.KernelTime; got < cost || got > elapsed {
				t.Errorf("KernelTime grew by %d, want between %d and %d", got, cost, elapsed)
			}
			if p.Stats.Syscalls != pStats.Syscalls+1 {
				t.Errorf("process counted %d calls", p.Stats.Syscalls-pStats.Syscalls)
			}
			for nr := range p.Stats.SyscallsBy {
				want := pStats.SyscallsBy[nr]
				if uint64(nr) == tc.nr {
					want++
				}
				if p.Stats.SyscallsBy[nr] != want {
					t.Errorf("SyscallsBy[%s] = %d, want %d", trace.SyscallNameOf(uint64(nr)), p.Stats.SyscallsBy[nr], want)
				}
			}
			if h.K.Stats.Syscalls != kStats.Syscalls+1 || h.K.Stats.KernelCrossing != kStats.KernelCrossing+1 {
				t.Errorf("kernel counted %d calls, %d crossings", h.K.Stats.Syscalls-kStats.Syscalls, h.K.Stats.KernelCrossing-kStats.KernelCrossing)
			}
			if len(*evs) != 1 {
				t.Fatalf("%d syscall events: %v", len(*evs), *evs)
			}
			ev := (*evs)[0]
			var a0 uint64
			if tc.a0 != nil {
				a0 = tc.a0(s)
			}
			wantRet := ret
			if tc.fail {
				wantRet = ^uint64(0)
			}
			if ev.Args[0] != tc.nr || ev.Args[1] != a0 || ev.Args[2] != wantRet {
				t.Errorf("event %v: want nr %d a0 %#x ret %#x", ev, tc.nr, a0, wantRet)
			}
			if ev.Time < start || ev.Time > h.M.Now() {
				t.Errorf("event at %d outside the call [%d, %d]", ev.Time, start, h.M.Now())
			}
		})
	}
}

func TestAllocGivesZeroedScatteredPages(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	p := h.K.NewProcess("t")
	before := h.K.MemInUse()
	const n = 4*pg + 5 // five pages
	va := alloc(t, p, n)
	if got := h.K.MemInUse() - before; got != 5*pg {
		t.Errorf("Alloc of %#x bytes holds %#x bytes of memory, want %#x (the spacers go back)", n, got, 5*pg)
	}
	if va%pg != 0 {
		t.Errorf("user address %#x not page aligned", va)
	}
	seen := map[uint64]bool{}
	var prev uint64
	for i := range uint64(5) {
		ph := physOf(t, p, va+i*pg)
		if ph%pg != 0 || seen[ph] {
			t.Fatalf("page %d at %#x: misaligned or shared", i, ph)
		}
		seen[ph] = true
		if i > 0 && (ph == prev+pg || ph+pg == prev) {
			t.Errorf("pages %d and %d are physically adjacent (%#x, %#x)", i-1, i, prev, ph)
		}
		prev = ph
	}
	b := make([]byte, 5*pg)
	p.LoadBytes(va, b)
	if !bytes.Equal(b, make([]byte, 5*pg)) {
		t.Error("fresh user memory is not zero")
	}
	// A second allocation does not overlap the first, and a guard page separates them.
	va2 := alloc(t, p, pg)
	if va2 < va+5*pg+pg {
		t.Errorf("second allocation at %#x, first ends at %#x: no guard page", va2, va+5*pg)
	}
}

func TestUserMemoryAccessors(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	p := h.K.NewProcess("t")
	va := alloc(t, p, 3*pg)
	p.Store32(va+pg-4, 0x1122_3344)
	p.Store16(va+pg, 0x5566)
	p.Store64(va+2*pg+8, 0x0102_0304_0506_0708)
	if v := p.Load32(va + pg - 4); v != 0x1122_3344 {
		t.Errorf("Load32 %#x", v)
	}
	if v := p.Load16(va + pg); v != 0x5566 {
		t.Errorf("Load16 %#x", v)
	}
	if v := p.Load64(va + 2*pg + 8); v != 0x0102_0304_0506_0708 {
		t.Errorf("Load64 %#x", v)
	}
	// Each page lands in its own physical page.
	if v := h.M.RAM().Load(physOf(t, p, va+pg), 2); v != 0x5566 {
		t.Errorf("RAM behind the second page holds %#x", v)
	}
	data := pattern(2*pg+100, 3)
	p.StoreBytes(va+50, data) // crosses two page boundaries
	for i, want := range [][]byte{data[:pg-50], data[pg-50 : 2*pg-50], data[2*pg-50:]} {
		off := uint64(0)
		if i == 0 {
			off = 50
		}
		if b := ramBytes(h, physOf(t, p, va+uint64(i)*pg)+off, uint64(len(want))); !bytes.Equal(b, want) {
			t.Errorf("StoreBytes: page %d does not hold its part of the data", i)
		}
	}
	// Aligned 8-byte chunks come back through LoadBytes (see the skipped test
	// below for the rest).
	got := make([]byte, 2*pg)
	p.LoadBytes(va+pg-8, got)
	if want := ramBytes(h, physOf(t, p, va)+pg-8, 8); !bytes.Equal(got[:8], want) {
		t.Error("LoadBytes of the first page's tail")
	}
	if want := ramBytes(h, physOf(t, p, va+pg), pg); !bytes.Equal(got[8:pg+8], want) {
		t.Error("LoadBytes of the second page")
	}
}

// TestLoadBytesReturnsWhatIsInMemory reads user memory at every alignment and
// length up to 24 bytes and compares with RAM.
func TestLoadBytesReturnsWhatIsInMemory(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	p := h.K.NewProcess("t")
	va := alloc(t, p, pg)
	data := pattern(64, 0x31)
	p.StoreBytes(va, data)
	for off := range 8 {
		for n := 1; n <= 24; n++ {
			got := make([]byte, n)
			p.LoadBytes(va+uint64(off), got)
			if !bytes.Equal(got, data[off:off+n]) {
				t.Errorf("LoadBytes(va+%d, %d bytes) = %x, want %x", off, n, got, data[off:off+n])
			}
		}
	}
}

// TestUnmappedAccessStopsTheRunWithSegfault: a user access to an address the
// process has not mapped ends the run, and the run's result carries the fault.
func TestUnmappedAccessStopsTheRunWithSegfault(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	p := h.K.NewProcess("t")
	va := alloc(t, p, 2*pg)
	guard := va + 2*pg
	buf := make([]byte, 16)
	for _, tc := range []struct {
		name   string
		addr   uint64
		access func()
	}{
		{"load32 at 0", 0, func() { p.Load32(0) }},
		{"load16 low", 0x1234, func() { p.Load16(0x1234) }},
		{"load64 guard page", guard, func() { p.Load64(guard) }},
		{"store32 guard page", guard + 8, func() { p.Store32(guard+8, 1) }},
		{"store16 before the mapping", va - 2, func() { p.Store16(va-2, 1) }},
		{"store64 kernel address", 0xFFFF_8000_0000_0000, func() { p.Store64(0xFFFF_8000_0000_0000, 1) }},
		{"loadbytes running off the end", guard, func() { p.LoadBytes(guard-8, buf) }},
		{"storebytes running off the end", guard, func() { p.StoreBytes(guard-4, buf) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := sim.Run(func() error {
				tc.access()
				return errors.New("the access returned")
			})
			var stopped *sim.Stopped
			var sf *kernel.Segfault
			if !errors.As(err, &stopped) || !errors.As(err, &sf) {
				t.Fatalf("run ended with %v (%T), want stopped by a *kernel.Segfault", err, err)
			}
			if sf.Addr != tc.addr {
				t.Errorf("segfault at %#x, want %#x", sf.Addr, tc.addr)
			}
			if want := fmt.Sprintf("segmentation fault at %#x", tc.addr); sf.Error() != want {
				t.Errorf("error %q, want %q", sf.Error(), want)
			}
		})
	}
	// The mapped pages still work.
	p.Store32(va+2*pg-4, 7)
	if p.Load32(va+2*pg-4) != 7 {
		t.Fatal("mapped memory broken after segfaults")
	}
}

func TestPinUserPagesBuildsAScatterlist(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	p := h.K.NewProcess("t")
	va := alloc(t, p, 4*pg)
	var phys [4]uint64
	for i := range phys {
		phys[i] = physOf(t, p, va+uint64(i)*pg)
	}
	for _, tc := range []struct {
		off, n uint64
		pages  int
	}{
		{0, 1, 1},
		{0x10, 0x20, 1},
		{0, pg, 1},
		{0xFFF, 2, 2},
		{0x800, pg, 2},
		{0, 4 * pg, 4},
		{0x123, 3 * pg, 4},
		{pg, 2*pg + 1, 3},
		{3*pg + 0x100, pg - 0x100, 1},
	} {
		t.Run(fmt.Sprintf("%#x+%#x", tc.off, tc.n), func(t *testing.T) {
			sg, err := p.PinUserPages(va+tc.off, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if len(sg) != tc.pages {
				t.Fatalf("%d pieces, want %d: %+v", len(sg), tc.pages, sg)
			}
			var total uint64
			at := tc.off
			for i, s := range sg {
				page := at / pg
				if s.Phys != phys[page]+at%pg {
					t.Errorf("piece %d at %#x, want %#x", i, s.Phys, phys[page]+at%pg)
				}
				if i > 0 && s.Phys%pg != 0 {
					t.Errorf("piece %d starts mid-page", i)
				}
				if i < len(sg)-1 && (s.Phys+s.Len)%pg != 0 {
					t.Errorf("piece %d ends mid-page", i)
				}
				if s.DMAAddr != 0 || s.DMALen != 0 {
					t.Errorf("piece %d already has a DMA address", i)
				}
				total += s.Len
				at += s.Len
			}
			if total != tc.n {
				t.Errorf("pieces cover %#x bytes, want %#x", total, tc.n)
			}
			if first := min(tc.n, pg-tc.off%pg); sg[0].Len != first {
				t.Errorf("first piece %#x bytes, want %#x", sg[0].Len, first)
			}
			if p.Pinned() != tc.pages {
				t.Errorf("Pinned %d, want %d", p.Pinned(), tc.pages)
			}
			// A second pin of the same pages is counted per page, not per pin.
			again, _ := p.PinUserPages(va+tc.off, tc.n)
			if p.Pinned() != tc.pages {
				t.Errorf("Pinned %d after pinning twice", p.Pinned())
			}
			p.UnpinUserPages(sg)
			if p.Pinned() != tc.pages {
				t.Errorf("Pinned %d with one pin left", p.Pinned())
			}
			p.UnpinUserPages(again)
			if p.Pinned() != 0 {
				t.Errorf("Pinned %d after unpinning", p.Pinned())
			}
		})
	}
}

func TestPinUserPagesRefusesWhatIsNotUserMemory(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	p := h.K.NewProcess("t")
	va := alloc(t, p, 2*pg)
	fd := open(t, p)
	db, err := p.Mmap(fd, driver.MmapDoorbell, pg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		va, n uint64
	}{
		{"into the guard page", va + pg, pg + 1},
		{"unmapped", 0x1000, 8},
		{"device memory", db, 4},
		{"starts before the mapping", va - 1, 2},
	} {
		sg, err := p.PinUserPages(tc.va, tc.n)
		if !errors.Is(err, kernel.EINVAL) || sg != nil {
			t.Errorf("%s: %v, %v; want EINVAL", tc.name, sg, err)
		}
		if p.Pinned() != 0 {
			t.Errorf("%s: a failed pin left %d pages pinned", tc.name, p.Pinned())
		}
	}
	if sg, err := p.PinUserPages(va, 0); err != nil || len(sg) != 0 {
		t.Errorf("pin of 0 bytes: %v, %v", sg, err)
	}
}

func TestMmapOfTheDoorbellPageReachesTheDevice(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	p := h.K.NewProcess("t")
	fd := open(t, p)
	va, err := p.Mmap(fd, driver.MmapDoorbell, pg)
	if err != nil {
		t.Fatal(err)
	}
	if va%pg != 0 {
		t.Fatalf("mapping at %#x", va)
	}
	evs := record(t, h, trace.RegWrite, trace.Doorbell, trace.CPUWrite)
	tail := h.M.Device().State().SQTail // ring with nothing new: harmless
	p.Store32(va+sacc.RegSQTail-sacc.DoorbellPage, tail)
	h.K.CPU.Delay(h.M.Cost().MMIOWrite) // the store is a posted write
	var regWrite, doorbell bool
	for _, ev := range *evs {
		switch ev.Kind {
		case trace.RegWrite:
			if ev.Args[0] == sacc.RegSQTail && ev.Args[1] == 4 && ev.Args[2] == uint64(tail) {
				regWrite = true
			}
		case trace.Doorbell:
			if ev.Args[0] == uint64(tail) {
				doorbell = true
			}
		}
	}
	if !regWrite || !doorbell {
		t.Fatalf("a user store to the doorbell page: events %v, want sacc_reg_write SQ_TAIL and sacc_doorbell", *evs)
	}
	if h.M.Device().State().Status&sacc.StatusError != 0 {
		t.Fatal("the doorbell halted the device")
	}
	// The doorbell page's registers are write-only: user loads read 0.
	if v := p.Load32(va); v != 0 {
		t.Errorf("SQ_TAIL reads %#x", v)
	}
	// The device still works for the kernel afterwards.
	src := hosttest.KernelBuffer(t, h, pattern(64, 2))
	dst := hosttest.KernelBuffer(t, h, make([]byte, 64))
	if _, err := doMemcpy(h, src, dst, 64, false); err != nil {
		t.Fatal(err)
	}
	// A second mapping gets its own address range.
	va2, err := p.Mmap(fd, driver.MmapDoorbell, pg)
	if err != nil || va2 == va || (va2 > va && va2 < va+2*pg) {
		t.Fatalf("second mapping at %#x (%v), first at %#x", va2, err, va)
	}
}

func TestMmapRefusals(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	p := h.K.NewProcess("t")
	fd := open(t, p)
	for _, tc := range []struct {
		name           string
		offset, length uint64
		want           error
	}{
		{"register page", sacc.RegisterPage, pg, kernel.EPERM},
		{"unaligned offset", driver.MmapDoorbell + 4, pg, kernel.EINVAL},
		{"zero length", driver.MmapDoorbell, 0, kernel.EINVAL},
		{"past the BAR", driver.MmapDoorbell, 2 * pg, kernel.EINVAL},
		{"beyond the BAR", sacc.BAR0Size, pg, kernel.EINVAL},
	} {
		if va, err := p.Mmap(fd, tc.offset, tc.length); !errors.Is(err, tc.want) {
			t.Errorf("%s: Mmap = %#x, %v; want %v", tc.name, va, err, tc.want)
		}
	}
	if !strings.Contains(hosttest.Dmesg(t, h.K), "mmap of the register page refused (pid") {
		t.Error("the refused register-page mmap is not logged")
	}
}

func TestIoctlSubmitCopiesBetweenUserBuffers(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  host.Config
	}{
		{"no iommu", host.Config{}},
		{"iommu", withIOMMU},
		{"iommu lazy", withLazy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hosttest.Boot(t, tc.cfg)
			p := h.K.NewProcess("t")
			fd := open(t, p)
			const n = 3*pg - 100
			src, dst := alloc(t, p, n), alloc(t, p, n)
			args := alloc(t, p, driver.SubmitArgsSize)
			for round := range 3 { // repeated: IOVAs and pins are recycled
				data := pattern(n, byte(round))
				p.StoreBytes(src, data)
				a := driver.SubmitArgs{Opcode: sacc.OpMEMCPY, Length: n, Src: src, Dst: dst}
				a.Store(p, args)
				calls := p.Stats.Syscalls
				if _, err := p.Ioctl(fd, driver.IocSubmit, args); err != nil {
					t.Fatal(err)
				}
				if p.Stats.Syscalls != calls+1 {
					t.Errorf("one ioctl counted %d times", p.Stats.Syscalls-calls)
				}
				if a.LoadResult(p, args); a.Status != sacc.StatusOK || a.ResultLen != n {
					t.Fatalf("round %d: status %v result_len %d", round, a.Status, a.ResultLen)
				}
				got := make([]byte, n)
				p.LoadBytes(dst, got)
				if !bytes.Equal(got, data) {
					t.Fatalf("round %d: the copy did not arrive", round)
				}
				if p.Pinned() != 0 {
					t.Fatalf("round %d: %d pages left pinned", round, p.Pinned())
				}
			}
		})
	}
}

func TestCloseReleasesTheFile(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	p := h.K.NewProcess("t")
	fd := open(t, p)
	fd2 := open(t, p)
	if fd2 == fd {
		t.Fatal("two opens share a descriptor")
	}
	if err := p.Close(fd); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Ioctl(fd, driver.IocReleaseRings, 0); !errors.Is(err, kernel.EBADF) {
		t.Fatalf("ioctl on a closed fd: %v", err)
	}
	if ok, err := p.Poll(fd2, 1000); err != nil || ok {
		t.Fatalf("poll of an idle device: %v %v", ok, err)
	}
}

func TestPollSleepsUntilTheTimeout(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	p := h.K.NewProcess("t")
	fd := open(t, p)
	for _, timeout := range []sim.Time{0, 1_000, 50_000} {
		start := h.M.Now()
		ready, err := p.Poll(fd, timeout)
		if err != nil || ready {
			t.Fatalf("poll: %v %v", ready, err)
		}
		if el := h.M.Now() - start; el < timeout+h.M.Cost().Syscall {
			t.Errorf("poll with timeout %d returned after %d ns", timeout, el)
		}
	}
}

func TestAllocOutOfMemoryIsENOMEMAndLeaksNothing(t *testing.T) {
	h := hosttest.Boot(t, host.Config{Machine: machine.Config{RAMSize: 8 << 20}})
	p := h.K.NewProcess("t")
	before := h.K.MemInUse()
	va, err := p.Alloc(64 << 20)
	if !errors.Is(err, kernel.ENOMEM) {
		t.Fatalf("Alloc larger than RAM = %#x, %v; want ENOMEM", va, err)
	}
	if got := h.K.MemInUse(); got != before {
		t.Errorf("a failed Alloc left %#x bytes allocated", got-before)
	}
	if p.Stats.Syscalls != 1 {
		t.Errorf("%d system calls counted", p.Stats.Syscalls)
	}
	// Memory is still there for the next allocation, and nothing of the failed
	// one stays mapped: the new allocation's guard page faults.
	small := alloc(t, p, pg)
	p.Store32(small, 1)
	err = sim.Run(func() error {
		p.Load32(small + pg)
		return nil
	})
	if sf := (*kernel.Segfault)(nil); !errors.As(err, &sf) {
		t.Errorf("the failed allocation left pages mapped after the next allocation: the guard page read gave %v", err)
	}
}
