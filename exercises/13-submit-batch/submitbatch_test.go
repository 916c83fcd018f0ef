package submitbatch

import (
	"bytes"
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

const budget sim.Time = 1_000_000 // 1 ms: writing a batch takes a few µs

// TestBatches submits three batches of 5 copies into a 16-entry SQ that starts
// at slot 12, so the second batch wraps, on x86 and on arm64 with several seeds.
func TestBatches(t *testing.T) {
	for _, tc := range []struct {
		arch cpu.Arch
		seed uint64
	}{{cpu.X86, 1}, {cpu.ARM64, 1}, {cpu.ARM64, 2}, {cpu.ARM64, 3}} {
		t.Run(fmt.Sprintf("%v-seed%d", tc.arch, tc.seed), func(t *testing.T) {
			const size, per, batches, n = 16, 5, 3, 64
			r := ringrig.Up(t, host.Config{Machine: machine.Config{Seed: tc.seed}, CPU: cpu.Config{Arch: tc.arch}}, size)
			rd := ringrig.NewReader()
			// Move both rings to slot 12 with NOPs from the harness.
			for range 12 {
				r.Submit(sacc.Descriptor{Opcode: sacc.OpNOP})
				if !r.Until(20_000, 200, func() bool { _, ok := rd.Next(r); return ok }) {
					t.Fatal("check: a NOP did not complete")
				}
			}
			r.Regs.Writel(sacc.RegCQHead, rd.Head)
			data := make([]byte, n*per*batches)
			for i := range data {
				data[i] = byte(i/n + 1)
			}
			src := r.Buffer(t, data)
			dst := r.Buffer(t, make([]byte, len(data)))
			q := &SQ{Base: r.SQ, Size: size, Tail: r.Tail, NextID: 500}
			for b := range batches {
				jobs := make([]Job, per)
				for i := range jobs {
					k := uint64(b*per + i)
					jobs[i] = Job{Src: src + k*n, Dst: dst + k*n, Length: n}
				}
				tail, firstID := q.Tail, q.NextID
				var ids []uint32
				mark := r.Mark()
				r.Do("SubmitBatch", budget, func() { ids = SubmitBatch(r.CPU, r.Regs, q, jobs) })
				evs := r.Since(mark)
				want := (tail + per) % size
				var tails []trace.Event
				for _, ev := range check.Find(evs, trace.RegWrite) {
					if ev.Args[0] == sacc.RegSQTail {
						tails = append(tails, ev)
					}
				}
				switch {
				case len(tails) == 0:
					r.Fatalf("Batch %d: SubmitBatch wrote no doorbell (SQ_TAIL): the device does not know the descriptors are there.", b)
				case len(tails) > 1:
					r.Fatalf("Batch %d: SubmitBatch rang the doorbell %d times for %d jobs; one SQ_TAIL write, after the last "+
						"descriptor, hands over the whole batch:\n%s", b, len(tails), per, check.Lines(tails))
				case tails[0].Args[2] != uint64(want):
					r.Fatalf("Batch %d started at slot %d; after 5 descriptors SQ_TAIL must be %d (it wraps at %d), but SubmitBatch wrote %d.",
						b, tail, want, size, tails[0].Args[2])
				case q.Tail != want:
					r.Fatalf("Batch %d: after SubmitBatch q.Tail is %d; want %d.", b, q.Tail, want)
				case len(ids) != per:
					r.Fatalf("Batch %d: SubmitBatch returned %d req_ids for %d jobs.", b, len(ids), per)
				}
				for i, id := range ids {
					if id != firstID+uint32(i) || q.NextID != firstID+per {
						r.Fatalf("Batch %d: SubmitBatch returned the req_ids %v for %d jobs and left q.NextID at %d; want %d, %d, … "+
							"(one more for each job, from q.NextID) and q.NextID %d after them: two jobs in flight with one req_id "+
							"cannot be told apart.", b, ids, per, q.NextID, firstID, firstID+1, firstID+per)
					}
				}
				if late, bell, _ := ringrig.LateStores(evs, r.SQ, size, tail, per); len(late) > 0 {
					r.Fatalf("Batch %d: the doorbell reached the device while descriptor stores were still in the store buffer: the "+
						"CPU issued it\n  %s\nbut %d stores into the batch's slots landed only after that, the first:\n  %s\n"+
						"writel_relaxed orders nothing: a write barrier (c.WMB()) must come after the last descriptor store and "+
						"before the doorbell (§7.4).", b, bell, len(late), late[0])
				}
				if halt := check.Find(r.Since(mark), trace.DeviceError); len(halt) > 0 {
					r.Fatalf("The device halted:\n%s", check.Lines(halt))
				}
				// Wait for the batch, and look at what the device read.
				var got []sacc.Completion
				r.Until(200_000, 500, func() bool {
					for {
						c, ok := rd.Next(r)
						if !ok {
							break
						}
						got = append(got, c)
					}
					return len(got) == per
				})
				r.Regs.Writel(sacc.RegCQHead, rd.Head)
				descs := check.Find(r.Since(mark), trace.Descriptor)
				for i, c := range got {
					if c.ReqID != ids[min(i, len(ids)-1)] || c.Status != sacc.StatusOK {
						r.Fatalf("Batch %d: completion %d is %+v, but SubmitBatch said req_id %d. The device read:\n%s"+
							"A NOP with req_id 0 is a slot read before the descriptor reached memory: on arm64, a write barrier "+
							"(c.WMB()) must come after the last descriptor store and before the doorbell (§7.4).",
							b, i, c, ids[min(i, len(ids)-1)], check.Lines(descs))
					}
				}
				if len(got) != per {
					r.Fatalf("Batch %d: %d of %d jobs completed within 200 µs. The device read:\n%s", b, len(got), per, check.Lines(descs))
				}
				for i, d := range descs {
					irq := d.Args[3]&sacc.FlagInterrupt != 0
					if irq != (i == len(descs)-1) {
						r.Fatalf("Batch %d: descriptor %d of %d has the interrupt flag %v. Ask for an interrupt on the last "+
							"descriptor of the batch only: its completion comes last, and one interrupt then reports them all.\n%s",
							b, i, len(descs), irq, check.Lines(descs))
					}
				}
			}
			out := make([]byte, len(data))
			r.M.RAM().Read(dst, out)
			if !bytes.Equal(out, data) {
				r.Fatalf("Every job completed, but the destination does not hold the source: are Src, Dst and Length in the right fields?")
			}
		})
	}
}

// TestEmptyBatch: nothing to do, nothing written.
func TestEmptyBatch(t *testing.T) {
	r := ringrig.Up(t, host.Config{}, 8)
	q := &SQ{Base: r.SQ, Size: 8}
	mark := r.Mark()
	r.Do("SubmitBatch", budget, func() { SubmitBatch(r.CPU, r.Regs, q, nil) })
	if w := check.Find(r.Since(mark), trace.RegWrite, trace.CPUWrite); len(w) > 0 {
		r.Fatalf("SubmitBatch of no jobs wrote:\n%sAn empty batch rings no doorbell: the device would find nothing new.", check.Lines(w))
	}
}
