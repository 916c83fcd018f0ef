package machine_test

import (
	"testing"
	"time"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/baremetal"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/trace"
)

// newHost brings a machine up with rings of the given size and a ring-buffer
// trace recorder, as the benchmarks measure it.
func newHost(tb testing.TB, ring uint32) (*baremetal.Host, *trace.Ring) {
	tb.Helper()
	m, err := machine.New(machine.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	rec := trace.NewRing(4096)
	m.Tracer().Attach(rec)
	h, err := baremetal.Enumerate(m)
	if err != nil {
		tb.Fatal(err)
	}
	if err := h.Start(baremetal.SQAddr, ring, baremetal.CQAddrFor(ring), ring); err != nil {
		tb.Fatal(err)
	}
	return h, rec
}

// roundTrip submits one descriptor, rings the doorbell, runs the machine until the
// completion arrives and consumes it.
func roundTrip(tb testing.TB, h *baremetal.Host, d sacc.Descriptor) sacc.Completion {
	h.Put(d)
	h.Ring()
	for {
		if c, ok := h.Poll(); ok {
			return c
		}
		if !h.M.Step() {
			tb.Fatalf("machine went idle without completing req_id %#x", d.ReqID)
		}
	}
}

// BenchmarkNOPRoundTrip is one NOP descriptor through the machine: submit,
// doorbell, fetch, complete, poll — with every event recorded in memory.
func BenchmarkNOPRoundTrip(b *testing.B) {
	h, _ := newHost(b, 256)
	d := sacc.Descriptor{Opcode: sacc.OpNOP}
	for i := 0; i < 512; i++ { // warm up: wrap both rings
		roundTrip(b, h, d)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		d.ReqID = uint32(i)
		roundTrip(b, h, d)
	}
}

// TestNOPRoundTripAllocatesNothing holds the steady state to zero allocations.
func TestNOPRoundTripAllocatesNothing(t *testing.T) {
	h, _ := newHost(t, 64)
	d := sacc.Descriptor{Opcode: sacc.OpNOP}
	for range 256 {
		roundTrip(t, h, d)
	}
	if n := testing.AllocsPerRun(1000, func() { roundTrip(t, h, d) }); n != 0 {
		t.Fatalf("NOP round trip allocates %.1f times per descriptor; want 0", n)
	}
}

// BenchmarkMEMCPY64K moves 64 KiB per descriptor and reports its throughput as a
// ratio to Go's copy() of the same bytes measured in the same run.
func BenchmarkMEMCPY64K(b *testing.B) {
	const n = 64 << 10
	h, _ := newHost(b, 64)
	src, dst := uint64(baremetal.DataAddr), uint64(baremetal.DataAddr+0x100000)
	h.M.Fill(src, n, 0xA5)
	h.M.Fill(dst, n, 0x00)
	d := sacc.Descriptor{Src: src, Dst: dst, Length: n, Opcode: sacc.OpMEMCPY}
	for range 8 {
		roundTrip(b, h, d)
	}
	from, to := make([]byte, n), make([]byte, n)
	for i := range from {
		from[i] = byte(i)
	}
	b.SetBytes(n)
	b.ReportAllocs()
	b.ResetTimer()
	var device, plain time.Duration
	for b.Loop() {
		t0 := time.Now()
		roundTrip(b, h, d)
		t1 := time.Now()
		copy(to, from)
		device += t1.Sub(t0)
		plain += time.Since(t1)
	}
	if c := roundTrip(b, h, d); c.Status != sacc.StatusOK {
		b.Fatalf("MEMCPY failed: %v", c.Status)
	}
	b.ReportMetric(plain.Seconds()/device.Seconds(), "ratio-to-copy")
}
