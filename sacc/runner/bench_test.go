package runner

import (
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/baremetal"
	"github.com/saccbook/saccbook/sacc/machine"
)

// copies runs 64-byte MEMCPY jobs, one per doorbell, until the run has at least
// events events: a long run whose every position is different.
func copies(events uint64) Program {
	return func(m *machine.Machine) error {
		h, err := baremetal.Enumerate(m)
		if err != nil {
			return err
		}
		const ring = 256
		if err := h.Start(baremetal.SQAddr, ring, baremetal.CQAddrFor(ring), ring); err != nil {
			return err
		}
		for i := uint64(0); m.Tracer().Seq() < events; i++ {
			src := 0x400000 + i%512*64
			h.Put(sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: src, Dst: src + 0x100000, Length: 64, ReqID: uint32(i)})
			h.Ring()
			if _, err := h.Wait(1_000_000); err != nil {
				return err
			}
		}
		return nil
	}
}

// held100k is a run of 100 000 events held at its end.
func held100k(b *testing.B) (*Runner, uint64) {
	r, err := New(factory, copies(100_000))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.Close)
	st, err := r.Continue()
	if err != nil || st.Err != nil {
		b.Fatalf("the run: %+v %v", st, err)
	}
	pos, jb := r.Stats()
	b.Logf("%d events, %d positions, RAM journal %d bytes", st.Seq, pos, jb)
	return r, st.Seq
}

// lookAt is what a monitor command reads: the device's state and a page of RAM.
func lookAt(b *testing.B, r *Runner) {
	var buf [4096]byte
	if err := r.View(func(m *machine.Machine) {
		_ = m.Device().State()
		m.RAM().Read(0x500000, buf[:])
	}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkStepBack100k is one step back, and a look, at positions spread over a
// 100 000-event run: the view is already at the position, as after the step
// before.
func BenchmarkStepBack100k(b *testing.B) {
	r, end := held100k(b)
	for i := uint64(0); b.Loop(); i++ {
		b.StopTimer()
		p := 1 + (i*7919)%(end-1)
		if _, err := r.RunTo(p); err != nil {
			b.Fatal(err)
		}
		lookAt(b, r)
		b.StartTimer()
		if st, err := r.RunTo(p - 1); err != nil || st.Seq != p-1 {
			b.Fatalf("back to %d: %+v %v", p-1, st, err)
		}
		lookAt(b, r)
	}
}

// BenchmarkPlay100k is the whole 100 000-event run under the runner, which keeps
// what it needs to go back, and BenchmarkPlain100k the same run on a bare machine.
func BenchmarkPlay100k(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		r, err := New(factory, copies(100_000))
		if err != nil {
			b.Fatal(err)
		}
		if st, err := r.Continue(); err != nil || st.Err != nil {
			b.Fatalf("the run: %+v %v", st, err)
		}
		r.Close()
	}
}

func BenchmarkPlain100k(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		m, err := factory()
		if err != nil {
			b.Fatal(err)
		}
		if err := copies(100_000)(m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJumpBack100k goes from one position of a 100 000-event run to another
// anywhere in it, and looks: the view's RAM moves through the journal between them.
func BenchmarkJumpBack100k(b *testing.B) {
	r, end := held100k(b)
	for i := uint64(0); b.Loop(); i++ {
		p := (i * 7919) % end
		if _, err := r.RunTo(p); err != nil {
			b.Fatal(err)
		}
		lookAt(b, r)
	}
}

// BenchmarkReexecuteBack100k is one step back near the end of the 100 000-event
// run the way every step back went before the runner kept states: a request that
// acts, at a position in the past, re-executes the run up to there.
func BenchmarkReexecuteBack100k(b *testing.B) {
	r, end := held100k(b)
	for b.Loop() {
		if _, err := r.RunTo(end - 1); err != nil {
			b.Fatal(err)
		}
		if err := r.Do(func(*machine.Machine) {}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if _, err := r.Continue(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
