package reap

import (
	"fmt"
	"strings"
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

const budget sim.Time = 2_000_000 // 2 ms for three laps of NOPs: far more than enough

// TestThreeLaps runs twelve NOPs through a 4-entry CQ, keeping up to three in
// flight, and polls with the learner's Reap until all twelve came back.
func TestThreeLaps(t *testing.T) {
	laps(t, host.Config{}, "")
}

// TestThreeLapsOnARM64 does the same on a weakly ordered CPU, where a load may be
// performed up to 2 µs before its place in the program unless a read barrier
// orders it, for several seeds.
func TestThreeLapsOnARM64(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			laps(t, host.Config{Machine: machine.Config{Seed: seed}, CPU: cpu.Config{Arch: cpu.ARM64, MaxHoist: 2_000}},
				fmt.Sprintf("arm64, seed %d", seed))
		})
	}
}

func laps(t *testing.T, cfg host.Config, arm64 string) {
	const size, jobs = 4, 12
	r := ringrig.Up(t, cfg, size)
	q := &CQ{Base: r.CQ, Size: size, Phase: 1}
	var got []sacc.Completion
	var when []sim.Time // when done was given each
	mark := r.Mark()
	unordered := -1 // a Reap call that consumed entries with no read barrier
	r.Do("Reap", budget, func() {
		sent := 0
		deadline := r.M.Now() + 200_000
		for len(got) < jobs && r.M.Now() < deadline {
			for sent-len(got) < size-1 && sent < jobs {
				r.Submit(sacc.Descriptor{Opcode: sacc.OpNOP})
				sent++
			}
			call := r.Mark()
			n := Reap(r.CPU, r.Regs, q, func(c sacc.Completion) {
				got, when = append(got, c), append(when, r.M.Now())
			})
			if _, reads := ringrig.Barriers(r.Since(call)); n > 0 && reads == 0 && unordered < 0 {
				unordered = len(got) - n
			}
			if n == 0 {
				r.CPU.Relax()
			}
			if len(got) > jobs {
				return
			}
		}
	})
	evs := r.Since(mark)
	posted := check.Find(evs, trace.CQPost)
	for i, c := range got {
		if i >= len(posted) || i >= jobs || c.ReqID != uint32(i) {
			what := "an entry"
			if i < jobs {
				what = fmt.Sprintf("req_id %d", i)
			}
			why := "A zeroed entry has phase 0; on the first lap only phase 1 (q.Phase) is new."
			written := i < len(posted) && posted[i].Time <= when[i] // the device had posted entry i by then
			switch {
			case written && arm64 != "":
				why = fmt.Sprintf("On this CPU (%s) the loads of the entry's body were performed before the load of its phase, "+
					"and saw the slot as it was before the device wrote it: a read barrier (c.RMB()) must come after the phase "+
					"load and before the body loads (§7.2).", arm64)
			case written:
				why = "Was the body read before the phase? The device writes the phase last: only once the phase is new is the body."
			case i >= size:
				why = fmt.Sprintf("Slot %d still held last lap's entry: did you flip q.Phase when q.Head wrapped to 0?", i%size)
			}
			r.Fatalf("Completion %d handed to done was %+v, but the device had posted %d completions and the next one is %s.\n"+
				"Reap took an entry before the device had written it, or with a body it had not written yet. %s",
				i, c, min(len(posted), i), what, why)
		}
	}
	if unordered >= 0 && arm64 != "" {
		r.Fatalf("The completions came out right, but a Reap call that took completion %d on (%s) used no read barrier: "+
			"nothing kept the CPU from loading the body before the phase. Put c.RMB() after the phase load and before the "+
			"body loads (§7.2).", unordered, arm64)
	}
	if halt := check.Find(evs, trace.DeviceError); len(halt) > 0 {
		r.Fatalf("The device halted with error %#x: a CQ_HEAD value was out of range (0 to %d).", halt[0].Args[0], size-1)
	}
	var heads int
	for _, ev := range check.Find(evs, trace.RegWrite) {
		if ev.Args[0] == sacc.RegCQHead || ev.Args[0] == sacc.RegCQHeadDB {
			heads++
		}
	}
	if len(got) < jobs {
		st := r.State()
		switch {
		case heads == 0 && len(check.Find(evs, trace.CQFull)) > 0:
			r.Fatalf("Reap consumed %d completions, then the device stopped with its CQ full (tail %d, CQ_HEAD %d): CQ_HEAD was never written. (§7.3)",
				len(got), st.CQTail, st.CQHead)
		case len(got) == size && len(posted) > size:
			c := r.Entry(0)
			r.Fatalf("Reap consumed the first lap, %d completions, then found nothing new, although the device had posted req_id %d into slot 0 with phase %d.\n"+
				"Reap was still looking for phase %d: did you flip q.Phase when q.Head wrapped from %d to 0? (§7.2)",
				size, c.ReqID, c.Phase, q.Phase, size-1)
		}
		r.Fatalf("Reap consumed %d of %d completions within 200 µs; the device had posted %d (q is now %+v).", len(got), jobs, len(posted), *q)
	}
}

// TestOneWritePerReap lets three jobs finish, then calls Reap once: it must take
// all three, in order, and write CQ_HEAD once, with the slot it will read next.
func TestOneWritePerReap(t *testing.T) {
	r := ringrig.Up(t, host.Config{}, 8)
	for range 3 {
		r.Submit(sacc.Descriptor{Opcode: sacc.OpNOP})
	}
	if !r.Until(50_000, 500, func() bool { return r.State().CQTail == 3 }) {
		t.Fatal("check: the device did not complete three NOPs")
	}
	q := &CQ{Base: r.CQ, Size: 8, Phase: 1}
	var ids []string
	n := 0
	mark := r.Mark()
	r.Do("Reap", budget, func() {
		n = Reap(r.CPU, r.Regs, q, func(c sacc.Completion) { ids = append(ids, fmt.Sprint(c.ReqID)) })
	})
	if n != 3 || strings.Join(ids, ",") != "0,1,2" {
		r.Fatalf("With three completions waiting, Reap returned %d and handed done req_ids [%s]; want 3 and [0,1,2].", n, strings.Join(ids, ","))
	}
	var writes []trace.Event
	for _, ev := range check.Find(r.Since(mark), trace.RegWrite) {
		if ev.Args[0] == sacc.RegCQHead || ev.Args[0] == sacc.RegCQHeadDB {
			writes = append(writes, ev)
		}
	}
	switch {
	case len(writes) == 0:
		r.Fatalf("Reap consumed 3 completions, but CQ_HEAD was never written: the device still counts those slots as full.")
	case len(writes) > 1:
		r.Fatalf("Reap wrote CQ_HEAD %d times for 3 completions; one CQ_HEAD write per Reap is enough, after the loop:\n%s", len(writes), check.Lines(writes))
	case writes[0].Args[2] != 3:
		r.Fatalf("Reap wrote CQ_HEAD = %d; want 3, the slot it will read next.", writes[0].Args[2])
	}
}

// TestNothingNew: on a fresh, zeroed CQ nothing is new.
func TestNothingNew(t *testing.T) {
	r := ringrig.Up(t, host.Config{}, 8)
	q := &CQ{Base: r.CQ, Size: 8, Phase: 1}
	calls, n := 0, 0
	mark := r.Mark()
	r.Do("Reap", budget, func() { n = Reap(r.CPU, r.Regs, q, func(sacc.Completion) { calls++ }) })
	if n != 0 || calls != 0 {
		r.Fatalf("Before any job, Reap returned %d and called done %d times: it took zeroed entries (phase 0) for new ones, "+
			"before the device had written them. The driver expects phase 1 on the first lap.", n, calls)
	}
	if w := check.Find(r.Since(mark), trace.RegWrite); len(w) > 0 {
		r.Fatalf("Reap found nothing new but wrote a register:\n%s", check.Lines(w))
	}
}
