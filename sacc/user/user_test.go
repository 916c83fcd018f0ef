package user_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/host/hosttest"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/user"
)

func TestBypassMovesDataWithoutSystemCalls(t *testing.T) {
	h := hosttest.Boot(t, host.Config{Kernel: kernel.Config{IOMMU: true}})
	p := h.K.NewProcess("app")
	q, err := user.Open(p, 16)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3 * sacc.PageSize
	src, _ := p.Alloc(n)
	dst, _ := p.Alloc(n)
	payload := bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, n/7+1)[:n]
	p.StoreBytes(src, payload)
	sd, err := q.MapBuffer(src, n, kernel.DMAToDevice)
	if err != nil {
		t.Fatal(err)
	}
	dd, err := q.MapBuffer(dst, n, kernel.DMAFromDevice)
	if err != nil {
		t.Fatal(err)
	}
	setup := p.Stats.Syscalls
	for i := range 40 { // laps of the 16-entry ring, phases flipping
		q.Put(sacc.Descriptor{Src: sd, Dst: dd, Length: n, Opcode: sacc.OpMEMCPY})
		q.Ring()
		c, err := q.Wait(1_000_000)
		if err != nil || c.Status != sacc.StatusOK {
			t.Fatalf("job %d: %+v %v", i, c, err)
		}
	}
	if got := p.Stats.Syscalls - setup; got != 0 {
		t.Fatalf("the fast path made %d system calls", got)
	}
	got := make([]byte, n)
	p.LoadBytes(dst, got)
	if !bytes.Equal(got, payload) {
		t.Fatal("data did not arrive")
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Dev.Do(&driver.Request{Opcode: sacc.OpNOP}); err != nil {
		t.Fatalf("kernel queue after the process gave it back: %v", err)
	}
}

func TestRegisterPageIsNeverMapped(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	p := h.K.NewProcess("app")
	fd, err := p.Open(driver.DevPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Mmap(fd, sacc.RegisterPage, sacc.PageSize); !errors.Is(err, kernel.EPERM) {
		t.Fatalf("mapping the register page: %v, want EPERM", err)
	}
	if _, err := p.Mmap(fd, sacc.DoorbellPage, sacc.PageSize); err != nil {
		t.Fatalf("mapping the doorbell page: %v", err)
	}
	h2 := hosttest.Boot(t, host.Config{Machine: machineWithQuirk(quirk.MapRegisterPage)})
	p2 := h2.K.NewProcess("app")
	fd2, _ := p2.Open(driver.DevPath)
	va, err := p2.Mmap(fd2, sacc.RegisterPage, 2*sacc.PageSize)
	if err != nil {
		t.Fatalf("with the quirk the register page maps: %v", err)
	}
	if magic := p2.Load32(va); magic != sacc.MagicValue {
		t.Fatalf("user space reads MAGIC %#x through the bad mapping", magic)
	}
}

// TestKernelPathCostsSystemCalls runs the same copy through ioctl: one system
// call per job, and the kernel pins, maps and unmaps every time.
func TestKernelPathCostsSystemCalls(t *testing.T) {
	for _, iommu := range []bool{false, true} {
		h := hosttest.Boot(t, host.Config{Kernel: kernel.Config{IOMMU: iommu}})
		p := h.K.NewProcess("app")
		fd, err := p.Open(driver.DevPath)
		if err != nil {
			t.Fatal(err)
		}
		const n = 3 * sacc.PageSize
		src, _ := p.Alloc(n)
		dst, _ := p.Alloc(n)
		args, _ := p.Alloc(sacc.PageSize)
		p.StoreBytes(src, bytes.Repeat([]byte{9}, n))
		a := driver.SubmitArgs{Opcode: sacc.OpXFORM, Length: n, Src: src, Dst: dst}
		a.Store(p, args)
		before := p.Stats.Syscalls
		for range 5 {
			if _, err := p.Ioctl(fd, driver.IocSubmit, args); err != nil {
				t.Fatalf("iommu=%v: %v", iommu, err)
			}
		}
		if got := p.Stats.Syscalls - before; got != 5 {
			t.Fatalf("5 jobs took %d system calls", got)
		}
		if a.LoadResult(p, args); a.Status != sacc.StatusOK || a.ResultLen != n {
			t.Fatalf("status %v, result_len %d", a.Status, a.ResultLen)
		}
		if p.Load16(dst+n-2) != uint16(9^sacc.XFORMKey)*0x101 {
			t.Fatalf("iommu=%v: XFORM result wrong: %#x", iommu, p.Load16(dst+n-2))
		}
		if p.Pinned() != 0 {
			t.Fatalf("%d pages left pinned", p.Pinned())
		}
	}
}

func machineWithQuirk(q quirk.Quirk) machine.Config {
	return machine.Config{Quirks: quirk.Set(0).With(q)}
}
