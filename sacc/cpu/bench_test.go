package cpu_test

import (
	"testing"

	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/trace"
)

// BenchmarkPollIteration is one turn of a polling loop that finds nothing new: a
// load that hits the cache and cpu_relax, with a ring recorder attached.
func BenchmarkPollIteration(b *testing.B) {
	for _, cfg := range []struct {
		name string
		cfg  cpu.Config
	}{{"x86", cpu.Config{}}, {"arm64", cpu.Config{Arch: cpu.ARM64}}} {
		b.Run(cfg.name, func(b *testing.B) {
			c, h := setup(b, 1, cfg.cfg)
			c.Machine().Tracer().Attach(trace.NewRing(4096))
			c.Load16(h.CQ)
			b.ReportAllocs()
			for b.Loop() {
				c.Load16(h.CQ)
				c.Relax()
			}
		})
	}
}

// BenchmarkStoreAndLand is one store into the store buffer and its landing at
// the next operation boundary (x86), both traced.
func BenchmarkStoreAndLand(b *testing.B) {
	c, h := setup(b, 1, cpu.Config{})
	c.Machine().Tracer().Attach(trace.NewRing(4096))
	b.ReportAllocs()
	for i := uint64(0); b.Loop(); i++ {
		c.Store64(h.SQ+i%64*8, i)
	}
}
