package fewestbarriers

import (
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 5_000_000 // 5 ms: 48 NOPs need well under 0.2 ms

const (
	size = 8
	jobs = 48
)

func TestOnARM64(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			// Loads may be performed up to 2 µs early when nothing orders them.
			drive(t, host.Config{Machine: machine.Config{Seed: seed}, CPU: cpu.Config{Arch: cpu.ARM64, MaxHoist: 2_000}},
				fmt.Sprintf("arm64, seed %d", seed))
		})
	}
}

func TestOnX86(t *testing.T) {
	drive(t, host.Config{}, "x86")
}

// drive runs the jobs through the learner's Queue: batches of up to Size − 1,
// the first look at the CQ a few µs after each doorbell (so several completions
// wait), then polling until the batch is done.
func drive(t *testing.T, cfg host.Config, arch string) {
	r := ringrig.Up(t, cfg, size)
	q := &Queue{SQ: r.SQ, CQ: r.CQ, Size: size, Phase: 1}
	var got []sacc.Completion
	var when []sim.Time
	mark := r.Mark()
	// A failure found while the driver runs is reported once it has returned:
	// Fatalf must not be called from inside Do.
	var failure string
	fail := func(format string, a ...any) { failure = fmt.Sprintf(format, a...) }
	r.Do("the driver", budget, func() {
		sent := 0
		for len(got) < jobs {
			n := min(size-1, jobs-sent)
			descs := make([]sacc.Descriptor, n)
			for i := range descs {
				descs[i] = sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: uint32(0x100 + sent + i)}
			}
			first := q.Tail
			call := r.Mark()
			q.Submit(r.CPU, r.Regs, descs)
			evs := r.Since(call)
			if late, bell, _ := ringrig.LateStores(evs, r.SQ, size, first, uint32(n)); len(late) > 0 {
				fail("On %s the doorbell reached the device while descriptor stores were still in the store buffer: the CPU issued it\n  %s\n"+
					"but %d stores into the batch's slots landed only after that, the first:\n  %s\n"+
					"writel_relaxed orders nothing, and a barrier after the doorbell comes too late: the stores must be made "+
					"visible before the doorbell is issued (§7.4).", arch, bell, len(late), late[0])
				return
			}
			if k := len(check.Find(evs, trace.CPUBarrier)); k > 1 {
				fail("Submit of %d descriptors used %d barriers:\n%sOne write barrier orders every store before it against every store "+
					"after it: one, after the last descriptor and before the doorbell, is enough for the whole batch.",
					n, k, check.Lines(check.Find(evs, trace.CPUBarrier)))
				return
			}
			sent += n
			r.CPU.Delay(3_000) // let a few completions pile up
			for len(got) < sent {
				call := r.Mark()
				taken := q.Reap(r.CPU, r.Regs, func(c sacc.Completion) {
					got, when = append(got, c), append(when, r.M.Now())
				})
				bars := check.Find(r.Since(call), trace.CPUBarrier)
				switch {
				case taken == 0 && len(bars) > 0:
					fail("Reap found nothing new and still used %d barriers:\n%sWith no new entry there is no body to order "+
						"after a phase: an idle poll needs none.", len(bars), check.Lines(bars))
					return
				case len(bars) > 1:
					fail("Reap took %d completions with %d barriers:\n%sOne read barrier orders every load before it against "+
						"every load after it: look at all the phases first, then one barrier, then all the bodies.",
						taken, len(bars), check.Lines(bars))
					return
				}
				if len(got) > jobs {
					return
				}
				if taken == 0 {
					r.CPU.Relax()
				}
			}
		}
	})
	if failure != "" {
		r.Fatalf("%s", failure)
	}
	posted := check.Find(r.Since(mark), trace.CQPost)
	for i, c := range got {
		if want := uint32(0x100 + i); i < jobs && c.ReqID == want && c.Status == sacc.StatusOK {
			continue
		}
		written := i < len(posted) && posted[i].Time <= when[i]
		why := "The device had not posted it yet: is an entry taken only when its phase equals q.Phase?"
		if written {
			why = fmt.Sprintf("The device had posted it, with req_id %#x, before Reap read it: on %s the body's loads were performed "+
				"before the phase loads, and saw the slot as it was before (§7.2). The body may be read only once a load "+
				"that comes after the phase loads is sure to be performed after them.", posted[i].Args[1], arch)
		}
		r.Fatalf("Completion %d that Reap handed to done is %+v; want req_id %#x, status OK.\n%s", i, c, 0x100+i, why)
	}
}
