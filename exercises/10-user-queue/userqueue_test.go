package userqueue

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/bypassrig"
	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 5_000_000 // 5 ms of virtual time: far more than three laps need

// setUp boots, takes the queue with the harness's slow path and returns the
// learner's Queue on it.
func setUp(t *testing.T, arch cpu.Arch, seed uint64, size uint32) (*bypassrig.Rig, *Queue, int) {
	// On arm64, loads may be performed up to 2 µs ahead of their place when
	// nothing orders them: a missing read barrier shows.
	r := bypassrig.UpOn(t, cpu.Config{Arch: arch, MaxHoist: 2_000}, seed)
	h := r.Open(size)
	return r, &Queue{P: r.P, Doorbell: h.Doorbell, SQ: h.SQ, CQ: h.CQ, Size: size, Phase: 1}, h.FD
}

// run submits jobs through q, keeping at most Size − 1 in flight, and polls
// until every job has completed or 2 ms have passed. It returns the
// completions in the order Poll handed them out, and the system calls made.
func run(r *bypassrig.Rig, q *Queue, jobs []sacc.Descriptor) ([]sacc.Completion, uint64) {
	var got []sacc.Completion
	calls := r.P.Stats.Syscalls
	unfenced, unordered := -1, -1 // the first Submit with no write barrier before its doorbell, Poll with no read barrier
	arm64 := r.CPU.Arch() == cpu.ARM64
	r.Do("Submit and Poll", budget, func() {
		sent := 0
		deadline := r.M.Now() + 2_000_000
		for len(got) < len(jobs) && r.M.Now() < deadline && len(got) <= sent {
			for sent-len(got) < int(q.Size)-1 && sent < len(jobs) {
				mark := r.Mark()
				q.Submit(jobs[sent])
				if arm64 && unfenced < 0 && !fenced(r.Since(mark)) {
					unfenced = sent
				}
				sent++
			}
			mark := r.Mark()
			if c, ok := q.Poll(); ok {
				if _, reads := ringrig.Barriers(r.Since(mark)); arm64 && reads == 0 && unordered < 0 {
					unordered = len(got)
				}
				got = append(got, c)
			} else {
				r.CPU.Relax()
			}
		}
	})
	if unfenced >= 0 {
		r.Fatalf("Submit of job %d rang the doorbell with no write barrier between the descriptor's stores and the doorbell "+
			"store. On arm64 the store to the doorbell page is a posted write that does not wait for the store buffer: "+
			"the device may read the slot before the descriptor is in memory (§7.4). A barrier before the stores orders "+
			"nothing between them and the doorbell. Put q.P.Kernel().CPU.WMB() after the last descriptor store and before "+
			"the doorbell.", unfenced)
	}
	if unordered >= 0 {
		r.Fatalf("Poll took completion %d with no read barrier between the phase load and the body loads: on arm64 the body "+
			"may be loaded before the phase and hold what the slot held before (§7.2). Put q.P.Kernel().CPU.RMB() between them.", unordered)
	}
	return got, r.P.Stats.Syscalls - calls
}

// fenced reports whether a write barrier came after the last descriptor store
// and before the doorbell store was issued (cpu_mmio_write): the order the
// program asked for, whatever the store buffer happened to drain meanwhile. A
// barrier before the stores, or after the doorbell, orders nothing between them.
func fenced(evs []trace.Event) bool {
	barrier := false
	for _, ev := range evs {
		switch {
		case ev.Kind == trace.CPUStore:
			barrier = false
		case ev.Kind == trace.CPUBarrier && ev.Args[0] != trace.BarrierRMB:
			barrier = true
		case ev.Kind == trace.CPUMMIOWrite && ev.Args[0] == 0 && ev.Args[1] == sacc.RegSQTail:
			return barrier
		}
	}
	return true // no doorbell: the outcome says what went wrong
}

// diagnose explains why fewer completions came back than jobs went in.
func diagnose(r *bypassrig.Rig, q *Queue, got []sacc.Completion, want int) {
	evs := r.Events()
	heads := 0
	for _, ev := range check.Find(evs, trace.RegWrite) {
		if ev.Args[0] == sacc.RegCQHeadDB || ev.Args[0] == sacc.RegCQHead {
			heads++
		}
	}
	full := check.Find(evs, trace.CQFull)
	posted := len(check.Find(evs, trace.CQPost))
	bells := ringrig.Doorbells(evs)
	switch {
	case len(bells) > 0 && uint32(bells[len(bells)-1].Args[2]) != q.Tail:
		r.Fatalf("Poll handed out %d of %d completions: the last doorbell said SQ_TAIL %d, but q.Tail is %d. The doorbell must "+
			"carry the tail after the descriptor just written: the device takes the slots before the tail, and never sees "+
			"the last one.", len(got), want, bells[len(bells)-1].Args[2], q.Tail)
	case len(full) > 0 && heads == 0:
		r.Fatalf("Poll consumed %d completions, then the device stopped with its CQ full (%s): CQ_HEAD_DB was never written.\n"+
			"The device cannot see the process read a completion. After %d unreturned completions in a %d-entry CQ it stalls (§7.3). "+
			"Store the new Head at q.Doorbell + 4 (CQ_HEAD_DB) as Poll consumes entries: that is the v1 doorbell that makes bypass possible.",
			len(got), strings.TrimSpace(full[0].String()), q.Size-1, q.Size)
	case len(full) > 0:
		r.Fatalf("Poll consumed %d completions, but the device stalled with its CQ full (%s): the CQ_HEAD_DB values it was given "+
			"never freed enough slots. CQ_HEAD_DB takes the slot Poll will read next, q.Head.", len(got), strings.TrimSpace(full[0].String()))
	case len(got) == int(q.Size) && posted > int(q.Size):
		c, _ := r.Completion(q.CQ, 0)
		r.Fatalf("Poll consumed the first lap, %d completions, then found nothing new, although the device had posted req_id %d into slot 0 "+
			"with phase %d. Poll still wanted phase %d: flip q.Phase when q.Head wraps to 0. (§7.2)", q.Size, c.ReqID, c.Phase, q.Phase)
	case posted == 0:
		r.Fatalf("The device never posted a completion: it never saw a doorbell for these descriptors.\nThe last events:\n%s",
			check.Lines(last(evs, 8)))
	}
	r.Fatalf("Poll handed out %d of %d completions within 2 ms; the device posted %d.", len(got), want, posted)
}

func last(evs []trace.Event, n int) []trace.Event { return evs[max(0, len(evs)-n):] }

// TestThreeLapsOfNOPs runs 45 NOPs through a 16-entry queue: three laps.
func TestThreeLapsOfNOPs(t *testing.T) {
	r, q, _ := setUp(t, cpu.X86, 1, 16)
	jobs := make([]sacc.Descriptor, 45)
	for i := range jobs {
		jobs[i] = sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: uint32(100 + i)}
	}
	got, calls := run(r, q, jobs)
	for i, c := range got {
		if i >= len(jobs) || c.ReqID != jobs[i].ReqID {
			why := "A completion that is not new yet (wrong phase) or one read twice?"
			if i >= int(q.Size) && c.ReqID == jobs[i-int(q.Size)].ReqID {
				why = fmt.Sprintf("That is last lap's entry in slot %d: did you flip q.Phase when q.Head wraps to 0? (§7.2)", i%int(q.Size))
			}
			r.Fatalf("Completion %d that Poll handed out has req_id %d; want %d, the jobs' own order. %s",
				i, c.ReqID, jobs[min(i, len(jobs)-1)].ReqID, why)
		}
	}
	if len(got) < len(jobs) {
		diagnose(r, q, got, len(jobs))
	}
	if calls != 0 {
		r.Fatalf("Submit and Poll made %d system calls for 45 jobs; the fast path makes none. Use only loads and stores of the "+
			"process (q.P.Store32, q.P.Load16, …) and the CPU's barriers.", calls)
	}
	if errs := check.Find(r.Events(), trace.DeviceError, trace.GuestError); len(errs) > 0 {
		r.Fatalf("The jobs completed, but the machine logged:\n%s", check.Lines(errs))
	}
}

// TestCopiesOnARM64 copies 24 buffers of 64 bytes on a weakly ordered CPU, where
// a descriptor store may still be in the store buffer when the doorbell leaves.
func TestCopiesOnARM64(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			r, q, fd := setUp(t, cpu.ARM64, seed, 8)
			const n, jobsN = 64, 24
			data := make([]byte, n*jobsN)
			for i := range data {
				data[i] = byte(i/n + 1)
			}
			src := r.UserBytes(data)
			dst, err := r.P.Alloc(n * jobsN) // zeroed
			if err != nil {
				t.Fatal(err)
			}
			sd := r.MapBuffer(fd, src, n*jobsN, kernel.DMAToDevice)
			dd := r.MapBuffer(fd, dst, n*jobsN, kernel.DMAFromDevice)
			r.CPU.WMB()
			jobs := make([]sacc.Descriptor, jobsN)
			for i := range jobs {
				jobs[i] = sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: sd + uint64(i*n), Dst: dd + uint64(i*n), Length: n, ReqID: uint32(i)}
			}
			got, calls := run(r, q, jobs)
			descs := check.Find(r.Events(), trace.Descriptor)
			for i, c := range got {
				if c.ReqID != uint32(i) || c.Status != sacc.StatusOK {
					d := "none"
					if j := len(descs) - len(got) + i; j >= 0 && j < len(descs) {
						d = descs[j].String()
					}
					r.Fatalf("Completion %d is %+v; want req_id %d, status OK. The device read this descriptor: %s\n"+
						"On arm64 the CPU may make the doorbell visible before the descriptor: a write barrier (WMB) must come "+
						"between the descriptor stores and the doorbell store (§7.4).", i, c, i, d)
				}
			}
			if len(got) < jobsN {
				diagnose(r, q, got, jobsN)
			}
			out := make([]byte, n*jobsN)
			r.P.LoadBytes(dst, out)
			if !bytes.Equal(out, data) {
				for i := range out {
					if out[i] != data[i] {
						r.Fatalf("Every job completed, but job %d copied nothing: byte %d of the destination is %#x, not %#x.\n"+
							"The device read these descriptors:\n%s"+
							"A NOP, or a copy with the wrong length, where your MEMCPY should be: the device read the slot before "+
							"your stores had reached memory. On arm64 the CPU may make the doorbell visible before the descriptor: "+
							"a write barrier (WMB) must come between the descriptor stores and the doorbell store (§7.4).",
							i/n, i, out[i], data[i], check.Lines(descs))
					}
				}
			}
			if calls != 0 {
				r.Fatalf("Submit and Poll made %d system calls; the fast path makes none.", calls)
			}
		})
	}
}

// TestNothingNew: on an idle queue Poll finds nothing and touches no register.
func TestNothingNew(t *testing.T) {
	r, q, _ := setUp(t, cpu.X86, 1, 8)
	var ok bool
	mark := r.Mark()
	r.Do("Poll", budget, func() { _, ok = q.Poll() })
	if ok {
		r.Fatalf("Before any job, Poll reported a completion: the CQ is zeroed, so every entry has phase 0, and only phase 1 (q.Phase) is new.")
	}
	if w := check.Find(r.Since(mark), trace.RegWrite); len(w) > 0 {
		r.Fatalf("Poll found nothing new, yet wrote a register:\n%s", check.Lines(w))
	}
}
