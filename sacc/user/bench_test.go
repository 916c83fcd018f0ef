package user_test

import (
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/host/hosttest"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/trace"
	"github.com/saccbook/saccbook/sacc/user"
)

const jobBytes = 4096

func quietHost(b *testing.B) *host.Host {
	cfg := host.Config{Kernel: kernel.Config{IOMMU: true}}
	cfg.CPU.NoSource = true
	h := hosttest.Boot(b, cfg)
	h.M.Tracer().Attach(trace.NewRing(4096))
	return h
}

// BenchmarkBypassCopy4K: a 4 KiB MEMCPY per job from user space, no system call.
func BenchmarkBypassCopy4K(b *testing.B) {
	h := quietHost(b)
	p := h.K.NewProcess("app")
	q, err := user.Open(p, 64)
	if err != nil {
		b.Fatal(err)
	}
	src, _ := p.Alloc(jobBytes)
	dst, _ := p.Alloc(jobBytes)
	sd, _ := q.MapBuffer(src, jobBytes, kernel.DMAToDevice)
	dd, _ := q.MapBuffer(dst, jobBytes, kernel.DMAFromDevice)
	calls, start := p.Stats.Syscalls, h.M.Now()
	b.ReportAllocs()
	for b.Loop() {
		q.Put(sacc.Descriptor{Src: sd, Dst: dd, Length: jobBytes, Opcode: sacc.OpMEMCPY})
		q.Ring()
		if _, err := q.Wait(1_000_000); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(h.M.Now()-start)/float64(b.N), "virtual-ns/job")
	b.ReportMetric(float64(p.Stats.Syscalls-calls)/float64(b.N), "syscalls/job")
}

// BenchmarkKernelPathCopy4K: the same job through ioctl: a system call, pinning,
// mapping and unmapping every time.
func BenchmarkKernelPathCopy4K(b *testing.B) {
	h := quietHost(b)
	p := h.K.NewProcess("app")
	fd, err := p.Open(driver.DevPath)
	if err != nil {
		b.Fatal(err)
	}
	src, _ := p.Alloc(jobBytes)
	dst, _ := p.Alloc(jobBytes)
	args, _ := p.Alloc(sacc.PageSize)
	driver.SubmitArgs{Opcode: sacc.OpMEMCPY, Length: jobBytes, Src: src, Dst: dst}.Store(p, args)
	calls, start := p.Stats.Syscalls, h.M.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Ioctl(fd, driver.IocSubmit, args); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(h.M.Now()-start)/float64(b.N), "virtual-ns/job")
	b.ReportMetric(float64(p.Stats.Syscalls-calls)/float64(b.N), "syscalls/job")
}
