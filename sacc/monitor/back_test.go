package monitor

import (
	"bytes"
	"io"
	"testing"

	"github.com/saccbook/saccbook/sacc/baremetal"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/runner"
	"github.com/saccbook/saccbook/sacc/scenario"
)

// program is one of the runs the tests below go back and forth in.
type program struct {
	name string
	run  runner.Program
	// every is the spacing of the positions compared (1: all of them).
	every uint64
}

func programs(t testing.TB) []program {
	w, ok := baremetal.FindWorkload("mixed")
	if !ok {
		t.Fatal("no mixed workload")
	}
	sc := func(name string, opts map[string]string) runner.Program {
		s, ok := scenario.Find(name)
		if !ok {
			t.Fatalf("no scenario %q", name)
		}
		return func(m *machine.Machine) error { return s.Run(m, &scenario.Env{Log: io.Discard, Options: opts}) }
	}
	ps := []program{
		{"mixed", func(m *machine.Machine) error { return w.Run(m, io.Discard) }, 1},
		{"driver iommu=on", sc("driver", map[string]string{"iommu": "on"}), 1},
		{"dma-sync", sc("dma-sync", nil), 1},
		{"capstone", sc("capstone", nil), 211},
	}
	if testing.Short() {
		ps = ps[:2]
	}
	return ps
}

// lookLines are what is compared at every position: every read-only view the
// monitor has of the machine, and RAM where the rings, the data and the page tables
// are.
var lookLines = []string{
	"stop", "info registers", "info rings", "info iommu", "info irq", "info pci", "info mtree",
	"info iommu 0x200000", "info iommu 0x100000",
	"xp /64xw 0x100000", "xp /32xw 0x110000", "xp /64xb 0x200000", "xp /64xb 0x201000",
	"x /16xw 0x100000", "xp /32xg 0x300000", "xp /16xw 0x1000000",
}

func looks(mo *Monitor, out *bytes.Buffer) string {
	out.Reset()
	for _, l := range lookLines {
		mo.Exec(l)
	}
	return out.String()
}

// TestBackAndForthMatchesTheRun: the monitor's answers at every position of a run
// are the same when the run gets there as it happens (which is what re-executing
// up to a position does), when the held run goes back to it from the end, and when
// it steps forward to it again through the past.
func TestBackAndForthMatchesTheRun(t *testing.T) {
	for _, p := range programs(t) {
		t.Run(p.name, func(t *testing.T) {
			// As it happens: one run, looked at at each position in turn.
			live, err := runner.New(machineFactory, p.run)
			if err != nil {
				t.Fatal(err)
			}
			defer live.Close()
			var out bytes.Buffer
			mo := New(live, &out)
			// want[k] is the look after k steps; done is the look once the program
			// has returned (held at the last event's number, but after it).
			want := map[uint64]string{}
			var last uint64
			var done string
			for {
				st := live.State()
				if st.Done {
					done = looks(mo, &out)
					break
				}
				if st.Seq%p.every == 0 {
					want[st.Seq] = looks(mo, &out)
				}
				last = st.Seq
				if st, err = live.Step(1); err != nil {
					t.Fatal(err)
				}
				if live.Past() {
					t.Fatal("stepping forward left the frontier")
				}
			}
			t.Logf("%d events, %d positions compared", last, len(want))

			held, err := runner.New(machineFactory, p.run)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			if _, err := held.Continue(); err != nil {
				t.Fatal(err)
			}
			mo = New(held, &out)
			if got := looks(mo, &out); got != done {
				t.Fatalf("at the end:\n%s\nas the run got there:\n%s", got, done)
			}
			check := func(how string, seq uint64) {
				t.Helper()
				w, ok := want[seq]
				if !ok {
					return
				}
				if st := held.State(); st.Seq != seq {
					t.Fatalf("%s: held at %d, want %d", how, st.Seq, seq)
				}
				if got := looks(mo, &out); got != w {
					t.Fatalf("%s to event %d:\n%s\nas the run got there:\n%s", how, seq, got, w)
				}
			}
			// RunTo(last) from the end is where the run already is; the position
			// inside the last event is reached by stepping forward below.
			for seq := last - 1; ; seq-- {
				if _, err := held.RunTo(seq); err != nil {
					t.Fatal(err)
				}
				if !held.Past() {
					t.Fatalf("back to %d is not in the past", seq)
				}
				check("back", seq)
				if seq == 0 {
					break
				}
			}
			for seq := uint64(1); seq <= last; seq++ {
				if _, err := held.Step(1); err != nil {
					t.Fatal(err)
				}
				check("forward", seq)
			}
			if st, err := held.Step(1); err != nil || !st.Done || held.Past() {
				t.Fatalf("one more step: %+v %v, want the end", st, err)
			}
			if got := looks(mo, &out); got != done {
				t.Fatalf("forward to the end:\n%s\nas the run got there:\n%s", got, done)
			}
		})
	}
}

func capstone(b *testing.B) runner.Program {
	s, ok := scenario.Find("capstone")
	if !ok {
		b.Fatal("no capstone")
	}
	return func(m *machine.Machine) error { return s.Run(m, &scenario.Env{Log: io.Discard}) }
}

// BenchmarkCapstonePlay is one play of the capstone under a runner, to the end.
func BenchmarkCapstonePlay(b *testing.B) {
	prog := capstone(b)
	for b.Loop() {
		r, err := runner.New(machineFactory, prog)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Continue(); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

// BenchmarkCapstoneBack100 is 100 monitor steps back from the end of the capstone,
// each followed by a look at the registers, as a learner stepping back does.
func BenchmarkCapstoneBack100(b *testing.B) {
	prog := capstone(b)
	r, err := runner.New(machineFactory, prog)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Continue(); err != nil {
		b.Fatal(err)
	}
	end := r.State().Seq
	var out bytes.Buffer
	mo := New(r, &out)
	for b.Loop() {
		if _, err := r.RunTo(end + 1); err != nil { // back to the frontier
			b.Fatal(err)
		}
		for range 100 {
			out.Reset()
			mo.Exec("back")
			mo.Exec("info registers")
		}
	}
}
