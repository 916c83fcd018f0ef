package driver_test

import (
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/trace"
)

// benchHost boots a quiet system: a ring recorder keeps the trace in memory and
// the CPU skips source lookups, as a throughput run would.
func benchHost(b *testing.B, cfg host.Config) *host.Host {
	cfg.CPU.NoSource = true
	h, err := host.Boot(cfg)
	if err != nil {
		b.Fatal(err)
	}
	h.M.Tracer().Attach(trace.NewRing(4096))
	return h
}

// BenchmarkDriverNOP is one NOP per doorbell through the whole driver: queue,
// wmb, doorbell, poll the CQ, CQ_HEAD.
func BenchmarkDriverNOP(b *testing.B) {
	h := benchHost(b, host.Config{Driver: driver.Config{RingSize: 256}})
	r := &driver.Request{Opcode: sacc.OpNOP}
	b.ReportAllocs()
	start := h.M.Now()
	for b.Loop() {
		if err := h.Dev.Do(r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(h.M.Now()-start)/float64(b.N), "virtual-ns/job")
}

// BenchmarkDriverNOPBatch64 is 64 NOPs per doorbell.
func BenchmarkDriverNOPBatch64(b *testing.B) {
	h := benchHost(b, host.Config{Driver: driver.Config{RingSize: 256}})
	reqs := make([]*driver.Request, 64)
	for i := range reqs {
		reqs[i] = &driver.Request{Opcode: sacc.OpNOP}
	}
	b.ReportAllocs()
	start := h.M.Now()
	jobs := 0
	for b.Loop() {
		if _, err := h.Dev.SubmitBatch(reqs); err != nil {
			b.Fatal(err)
		}
		if err := h.Dev.Wait(reqs[63]); err != nil {
			b.Fatal(err)
		}
		jobs += 64
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(jobs), "wall-ns/job")
	b.ReportMetric(float64(h.M.Now()-start)/float64(jobs), "virtual-ns/job")
	b.ReportMetric(float64(jobs)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkDriverNOPInterrupts is one NOP per doorbell, completed by interrupt.
func BenchmarkDriverNOPInterrupts(b *testing.B) {
	h := benchHost(b, host.Config{CPU: cpu.Config{}, Driver: driver.Config{RingSize: 256, Interrupts: true}})
	r := &driver.Request{Opcode: sacc.OpNOP, IRQ: true}
	b.ReportAllocs()
	start := h.M.Now()
	for b.Loop() {
		if err := h.Dev.Do(r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(h.M.Now()-start)/float64(b.N), "virtual-ns/job")
}

// TestDriverNOPAllocatesNothing holds the driver's steady state, one job per
// doorbell and 64 per doorbell, to zero allocations.
func TestDriverNOPAllocatesNothing(t *testing.T) {
	h, err := host.Boot(host.Config{Driver: driver.Config{RingSize: 256}})
	if err != nil {
		t.Fatal(err)
	}
	h.M.Tracer().Attach(trace.NewRing(4096))
	r := &driver.Request{Opcode: sacc.OpNOP}
	reqs := make([]*driver.Request, 64)
	for i := range reqs {
		reqs[i] = &driver.Request{Opcode: sacc.OpNOP}
	}
	batch := func() {
		if _, err := h.Dev.SubmitBatch(reqs); err != nil {
			t.Fatal(err)
		}
		if err := h.Dev.Wait(reqs[63]); err != nil {
			t.Fatal(err)
		}
	}
	for range 8 { // warm up: wrap the rings
		batch()
	}
	if n := testing.AllocsPerRun(200, func() {
		if err := h.Dev.Do(r); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("one NOP through the driver allocates %.1f times; want 0", n)
	}
	if n := testing.AllocsPerRun(20, batch); n != 0 {
		t.Errorf("64 NOPs per doorbell allocate %.1f times; want 0", n)
	}
}
