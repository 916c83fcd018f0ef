package scenario

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/user"
)

// Chapter 13, the capstone: the whole stack, measured.

var _ = register(Scenario{
	Chapter: 13, Primary: true, Name: "capstone",
	Summary: "64 copies five ways: one doorbell each or one per batch, polling or interrupts (one per job or one per batch), and from user space with no system call; throughput and latency in virtual time",
	Options: []Option{ch13Size},
	Quirks:  []quirk.Quirk{quirk.NoCQHead, quirk.DrainThenAck},
	Run:     Capstone,
})

var _ = register(Scenario{
	Chapter: 13, Name: "capstone-sweep",
	Summary: "batch size 1 to 16 with one doorbell and one interrupt per batch: throughput rises, latency rises with it",
	Options: []Option{ch13Size},
	Run:     CapstoneSweep,
})

// ch13Size is the bytes each job copies.
var ch13Size = Option{Name: "size", Doc: "bytes each job copies", Default: "4096", Values: values("4096", "256")}

const (
	ch13Jobs = 64
	ch13Ring = 32
	ch13Page = 4096 // every buffer gets a page of its own
)

// ch13SizeOption reads size=4096|256: the bytes each job copies.
func ch13SizeOption(env *Env) (uint32, error) {
	switch v := env.Option("size", "4096"); v {
	case "4096":
		return 4096, nil
	case "256":
		return 256, nil
	default:
		return 0, fmt.Errorf("size=%s: want 4096 or 256", v)
	}
}

// ch13Result is one measured run.
type ch13Result struct {
	size       uint32
	total      sim.Time
	latencySum sim.Time
	latencyMax sim.Time
	doorbells  uint64
	interrupts uint64
}

// String is a result line, in the one shape the browser charts (the Results
// view, static/views/results.js, reads it from the run's narrative, which the
// end message carries): "MODE: N ns total, X MB/s, latency mean M ns max K ns,
// D doorbells, I interrupts", a line may add ", S system calls".
// TestResultLinesHaveTheChartedShape holds every measuring line to it.
func (r ch13Result) String() string {
	mbps := uint64(ch13Jobs*r.size) * 1000 / uint64(r.total) // bytes per ns × 1000 = MB/s
	return fmt.Sprintf("%6d ns total, %4d MB/s, latency mean %5d ns max %5d ns, %2d doorbells, %2d interrupts",
		r.total, mbps, r.latencySum/ch13Jobs, r.latencyMax, r.doorbells, r.interrupts)
}

// ch13Buffers maps one source and ch13Jobs destinations once, up front, as a
// real driver keeps its buffers mapped.
type ch13Buffers struct {
	size uint32
	src  uint64
	dst  []uint64
}

func ch13Map(h *host.Host, size uint32) (ch13Buffers, error) {
	pd := h.Dev.PCI()
	b := ch13Buffers{size: size}
	p, err := h.K.AllocPages(ch13Page)
	if err != nil {
		return b, err
	}
	if b.src, err = pd.DMAMapSingle(p, ch13Page, kernel.DMAToDevice); err != nil {
		return b, err
	}
	for range ch13Jobs {
		p, err := h.K.AllocPages(ch13Page)
		if err != nil {
			return b, err
		}
		d, err := pd.DMAMapSingle(p, ch13Page, kernel.DMAFromDevice)
		if err != nil {
			return b, err
		}
		b.dst = append(b.dst, d)
	}
	return b, nil
}

// ch13Reload unloads the driver and loads it again with other parameters, as
// rmmod and insmod would.
func ch13Reload(h *host.Host, irq bool) error {
	h.Drv.Unregister()
	d, err := driver.Register(h.K, driver.Config{RingSize: ch13Ring, Interrupts: irq})
	if err != nil {
		return err
	}
	h.Drv, h.Dev = d, d.Dev
	return nil
}

// ch13Kernel runs the jobs through the kernel driver in batches of batch, one
// doorbell per batch; irqEvery asks for an interrupt on every job, otherwise
// only the last job of a batch asks (interrupt coalescing by the driver).
func ch13Kernel(h *host.Host, b ch13Buffers, batch int, irqEvery bool) (ch13Result, error) {
	irq := h.Drv.Config().Interrupts
	res := ch13Result{size: b.size}
	dev := h.Dev
	doorbells, interrupts, start := dev.Stats.Doorbells, dev.Stats.Interrupts, h.M.Now()
	for i := 0; i < ch13Jobs; i += batch {
		reqs := make([]*driver.Request, 0, batch)
		for j := i; j < i+batch && j < ch13Jobs; j++ {
			reqs = append(reqs, &driver.Request{Opcode: sacc.OpMEMCPY, Src: b.src, Dst: b.dst[j], Length: b.size, IRQ: irq && irqEvery})
		}
		reqs[len(reqs)-1].IRQ = irq
		if _, err := dev.SubmitBatch(reqs); err != nil {
			return res, err
		}
		for _, r := range reqs {
			if err := dev.Wait(r); err != nil {
				return res, err
			}
			lat := r.Completed - r.Submitted
			res.latencySum += lat
			res.latencyMax = max(res.latencyMax, lat)
		}
	}
	res.total = h.M.Now() - start
	res.doorbells, res.interrupts = dev.Stats.Doorbells-doorbells, dev.Stats.Interrupts-interrupts
	return res, nil
}

// ch13Bypass runs the jobs from a process with the user-space library: Put a
// batch, Ring once, then poll the batch's completions.
func ch13Bypass(h *host.Host, size uint32, batch int) (ch13Result, error) {
	res := ch13Result{size: size}
	p := h.K.NewProcess("capstone")
	src, err := p.Alloc(ch13Page)
	if err != nil {
		return res, err
	}
	dst, err := p.Alloc(ch13Jobs * ch13Page)
	if err != nil {
		return res, err
	}
	q, err := user.Open(p, ch13Ring)
	if err != nil {
		return res, err
	}
	sd, err := q.MapBuffer(src, ch13Page, kernel.DMAToDevice)
	if err != nil {
		return res, err
	}
	dd, err := q.MapBuffer(dst, ch13Jobs*ch13Page, kernel.DMAFromDevice)
	if err != nil {
		return res, err
	}
	calls, start := p.Stats.Syscalls, h.M.Now()
	for i := 0; i < ch13Jobs; i += batch {
		n := min(batch, ch13Jobs-i)
		for j := range n {
			q.Put(sacc.Descriptor{Src: sd, Dst: dd + uint64(i+j)*ch13Page, Length: size, Opcode: sacc.OpMEMCPY})
		}
		rung := h.M.Now()
		q.Ring()
		res.doorbells++
		for range n {
			if _, err := q.Wait(1_000_000); err != nil {
				return res, err
			}
			lat := h.M.Now() - rung
			res.latencySum += lat
			res.latencyMax = max(res.latencyMax, lat)
		}
	}
	res.total = h.M.Now() - start
	if p.Stats.Syscalls != calls {
		return res, fmt.Errorf("the bypass fast path made %d system calls", p.Stats.Syscalls-calls)
	}
	return res, q.Close()
}

// Capstone measures the same 64 copies five ways on one machine.
func Capstone(m *machine.Machine, env *Env) error {
	size, err := ch13SizeOption(env)
	if err != nil {
		return err
	}
	cfg := host.Config{Machine: m.Config(), Kernel: kernel.Config{IOMMU: true}, Driver: driver.Config{RingSize: ch13Ring}}
	h, err := boot(m, env, cfg)
	if err != nil {
		return err
	}
	b, err := ch13Map(h, size)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Log, "%d MEMCPYs of %d bytes, %d-entry rings, IOMMU on, buffers mapped once\n", ch13Jobs, size, ch13Ring)
	for _, run := range []struct {
		name     string
		irq      bool
		batch    int
		irqEvery bool
	}{
		{"polling, one doorbell per job ", false, 1, false},
		{"polling, one doorbell per 8   ", false, 8, false},
		{"irq,     one doorbell per job ", true, 1, true},
		{"irq,     8 per doorbell, 1 irq", true, 8, false},
	} {
		if h.Drv.Config().Interrupts != run.irq {
			if err := ch13Reload(h, run.irq); err != nil {
				return err
			}
		}
		r, err := ch13Kernel(h, b, run.batch, run.irqEvery)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Log, "%s: %v\n", run.name, r)
	}
	r, err := ch13Bypass(h, size, 8)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Log, "bypass,  one doorbell per 8   : %v, 0 system calls\n", r)
	return nil
}

// CapstoneSweep varies the batch size with interrupts coalesced per batch.
func CapstoneSweep(m *machine.Machine, env *Env) error {
	size, err := ch13SizeOption(env)
	if err != nil {
		return err
	}
	cfg := host.Config{Machine: m.Config(), Kernel: kernel.Config{IOMMU: true}, Driver: driver.Config{RingSize: ch13Ring, Interrupts: true}}
	h, err := boot(m, env, cfg)
	if err != nil {
		return err
	}
	b, err := ch13Map(h, size)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Log, "%d MEMCPYs of %d bytes, one doorbell and one interrupt per batch\n", ch13Jobs, size)
	for _, batch := range []int{1, 2, 4, 8, 16} {
		r, err := ch13Kernel(h, b, batch, false)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Log, "batch %2d: %v\n", batch, r)
	}
	return nil
}
