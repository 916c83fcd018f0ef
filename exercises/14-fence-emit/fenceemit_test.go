package fenceemit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/fencerig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 1_000_000 // 1 ms of virtual time: Submit writes a few descriptors

// setUp boots the rig and hands the learner its channel on the queue.
func setUp(t *testing.T, arch cpu.Arch, seed uint64) (*fencerig.Rig, *Channel) {
	r := fencerig.Up(t, cpu.Config{Arch: arch}, seed)
	return r, &Channel{P: r.P, Doorbell: r.Doorbell, SQ: r.SQ, Size: fencerig.RingSize, Tail: r.Tail,
		Fence: r.Fence.DMA, SlotsVA: r.SlotPage.VA, SlotsDMA: r.SlotPage.DMA, Slots: fencerig.Slots}
}

// submit runs the learner's Submit under the watchdog; it returns the point and
// the events of the call.
func submit(r *fencerig.Rig, c *Channel, jobs ...sacc.Descriptor) (uint64, []trace.Event) {
	mark := r.Mark()
	var point uint64
	r.Do("Submit", budget, func() { point = c.Submit(jobs...) })
	return point, r.Since(mark)
}

// descriptors reads n SQ slots from slot from on, straight from RAM.
func descriptors(r *fencerig.Rig, from, n uint32) []sacc.Descriptor {
	var out []sacc.Descriptor
	for i := range n {
		slot := (from + i) % fencerig.RingSize
		b := make([]byte, sacc.DescriptorSize)
		sg, err := r.P.PinUserPages(r.SQ+uint64(slot)*sacc.DescriptorSize, sacc.DescriptorSize)
		if err != nil {
			return out
		}
		r.P.UnpinUserPages(sg)
		r.M.RAM().Read(sg[0].Phys, b)
		out = append(out, sacc.DecodeDescriptor(b))
	}
	return out
}

// explainSQ says what is wrong with the descriptors Submit wrote into slots
// [from, from+n), jobs being how many jobs each call queued; "" if nothing is.
// A descriptor of 8 bytes is the learner's fence command (the jobs copy more).
func explainSQ(r *fencerig.Rig, from, n uint32, jobs int) string {
	ds := descriptors(r, from, n)
	srcs := map[uint64]bool{}
	fences := 0
	for i, d := range ds {
		slot := (from + uint32(i)) % fencerig.RingSize
		last := i%(jobs+1) == jobs
		switch {
		case d.Length != 8 && last:
			return fmt.Sprintf("SQ slot %d holds %+v where the fence command belongs: a MEMCPY of 8 bytes from a slot of the "+
				"slots page to c.Fence, after the jobs", slot, d)
		case d.Length != 8:
			continue
		case !last:
			return fmt.Sprintf("the fence command sits in SQ slot %d, before the job it should follow: queue the jobs first, "+
				"then the fence, so the device runs the fence only once the jobs are done", slot)
		case d.Opcode != sacc.OpMEMCPY:
			return fmt.Sprintf("the fence command in SQ slot %d has opcode %#x; it is a MEMCPY (sacc.OpMEMCPY)", slot, d.Opcode)
		case d.Dst != r.Fence.DMA:
			return fmt.Sprintf("the fence command in SQ slot %d copies to %#x: Dst must be c.Fence (%#x), the fence page's DMA address",
				slot, d.Dst, r.Fence.DMA)
		case d.Src < r.SlotPage.DMA || d.Src >= r.SlotPage.DMA+sacc.PageSize:
			return fmt.Sprintf("the fence command in SQ slot %d copies from %#x, which is not in the slots page: Src must be the "+
				"slot's DMA address, c.SlotsDMA + 8 × slot (c.SlotsVA is where the CPU sees the same page, and the device cannot "+
				"use it)", slot, d.Src)
		}
		fences++
		srcs[d.Src] = true
	}
	if fences > 1 && len(srcs) == 1 {
		for src := range srcs {
			return fmt.Sprintf("every fence command copies from the same slot (dma %#x). The device reads that slot only when it "+
				"reaches the fence, and by then Submit has stored a newer number in it: the first fence already says the newest "+
				"point. Give each point a slot of its own: slot = point mod c.Slots", src)
		}
	}
	return ""
}

// follow polls the fence page with the harness's own loads until it holds at
// least want or 300 µs have passed. Whenever the value changes, every job that
// value stands for (covered(v) jobs, 0 to covered(v) − 1) must be in place. It
// returns "" or what went wrong.
func follow(r *fencerig.Rig, want uint64, covered func(v uint64) int) string {
	last := uint64(0)
	var problem string
	r.Do("the harness's wait", budget, func() {
		deadline := r.M.Now() + 300_000
		for r.M.Now() <= deadline {
			v := r.P.Load64(r.Fence.VA)
			if v != last {
				r.CPU.RMB()
				if v < last {
					problem = fmt.Sprintf("the fence page went from %d back to %d: points only grow", last, v)
					return
				}
				for i := range min(covered(v), fencerig.Jobs) {
					if !r.Done(i) {
						problem = fmt.Sprintf("at t=%d ns the fence page said %d, but job %d was not in place yet: the fence ran ahead of the work",
							r.M.Now(), v, i+1)
						return
					}
				}
				last = v
			}
			if v >= want {
				return
			}
			r.CPU.Relax()
		}
		problem = fmt.Sprintf("the fence page still says %d after 300 µs, not %d", last, want)
	})
	return problem
}

// explainSilence says why the fence page never reached its point.
func explainSilence(r *fencerig.Rig, evs []trace.Event, c *Channel) string {
	var tails []uint64
	for _, ev := range check.Find(evs, trace.RegWrite) {
		if ev.Args[0] == sacc.RegSQTail {
			tails = append(tails, ev.Args[2])
		}
	}
	if errs := check.Find(evs, trace.DeviceError); len(errs) > 0 {
		return fmt.Sprintf("the device stopped with an error: %s(SQ_TAIL values written: %v; the tail is a slot index and wraps at c.Size, %d)",
			check.Lines(errs), tails, c.Size)
	}
	if len(tails) == 0 {
		return "the device never saw a doorbell: Submit must end with c.P.Store32(c.Doorbell, c.Tail)"
	}
	var fenceCmds []trace.Event
	for _, ev := range check.Find(evs, trace.Descriptor) {
		if ev.Args[2] == 8 {
			fenceCmds = append(fenceCmds, ev)
		}
	}
	if len(fenceCmds) == 0 {
		return "the device ran no command of 8 bytes: after the jobs, Submit must queue the fence, a MEMCPY of 8 bytes from the " +
			"point's slot (c.SlotsDMA + 8 × slot) to c.Fence"
	}
	if len(r.FenceWrites(evs)) == 0 {
		return fmt.Sprintf("the device ran %d commands of 8 bytes but wrote nothing into the fence page: Dst must be c.Fence (%#x), "+
			"the fence page's DMA address", len(fenceCmds), r.Fence.DMA)
	}
	return fmt.Sprintf("the device wrote the fence page, but it says %d: the slot the fence copied from did not hold the point. "+
		"Store c.Point in the slot (c.P.Store64(c.SlotsVA + 8 × slot, c.Point)) before the doorbell, and copy from that same slot "+
		"(c.SlotsDMA + 8 × slot)", r.FenceValue())
}

// TestAFenceAfterEachJob: six jobs, one Submit each, issued back to back, so
// several fences are in flight at once.
func TestAFenceAfterEachJob(t *testing.T) {
	r, c := setUp(t, cpu.X86, 1)
	calls := r.P.Stats.Syscalls
	mark := r.Mark()
	from := c.Tail
	for i := range 6 {
		point, evs := submit(r, c, r.Job(i))
		if point != uint64(i+1) {
			r.Fatalf("Submit number %d returned %d; want %d. Points count the fences: 1 for the first, then one more for each Submit.",
				i+1, point, i+1)
		}
		tails := 0
		for _, ev := range check.Find(evs, trace.RegWrite) {
			if ev.Args[0] == sacc.RegSQTail {
				tails++
			}
		}
		if tails != 1 {
			r.Fatalf("Submit rang the doorbell %d times for one job and its fence; ring it once, after both descriptors.", tails)
		}
	}
	if n := r.P.Stats.Syscalls - calls; n != 0 {
		r.Fatalf("Submit made %d system calls; it needs none: only the process's loads and stores and the CPU's barrier.", n)
	}
	if problem := follow(r, 6, func(v uint64) int { return int(v) }); problem != "" {
		if why := explainSQ(r, from, 12, 1); why != "" {
			problem += ".\n" + why
		} else if strings.Contains(problem, "still says") {
			problem += ".\n" + explainSilence(r, r.Since(mark), c)
		}
		r.Fatalf("%s.", problem)
	}
}

// TestOneFenceForABatch: two batches of four jobs, one fence each.
func TestOneFenceForABatch(t *testing.T) {
	r, c := setUp(t, cpu.X86, 1)
	mark := r.Mark()
	from := c.Tail
	for b := range 2 {
		jobs := []sacc.Descriptor{r.Job(4 * b), r.Job(4*b + 1), r.Job(4*b + 2), r.Job(4*b + 3)}
		point, _ := submit(r, c, jobs...)
		if point != uint64(b+1) {
			r.Fatalf("Submit of batch %d (four jobs) returned %d; want %d. One Submit is one fence and one point, however many "+
				"jobs it carries.", b+1, point, b+1)
		}
	}
	if c.Tail != (from+10)%c.Size {
		r.Fatalf("After two batches of four jobs c.Tail is %d; want %d: four job descriptors and one fence per Submit.",
			c.Tail, (from+10)%c.Size)
	}
	if problem := follow(r, 2, func(v uint64) int { return 4 * int(v) }); problem != "" {
		if why := explainSQ(r, from, 10, 4); why != "" {
			problem += ".\n" + why
		} else if strings.Contains(problem, "still says") {
			problem += ".\n" + explainSilence(r, r.Since(mark), c)
		}
		r.Fatalf("%s.", problem)
	}
}

// TestTheRingWraps: the harness fills the first 60 slots, and the learner's
// Submits go on from there, across the end of the 64-entry ring.
func TestTheRingWraps(t *testing.T) {
	r, c := setUp(t, cpu.X86, 1)
	for i := range 30 { // 30 jobs and 30 fences: slots 0 to 59
		r.Submit(uint64(i+1), r.Job(i%fencerig.Jobs))
	}
	if !r.WaitFor(30, 500_000) {
		t.Fatal("check: the harness's own jobs did not finish")
	}
	r.P.Store32(r.Doorbell+sacc.RegCQHeadDB-sacc.DoorbellPage, 60) // their CQ slots go back
	c.Tail, c.Point = r.Tail, 30
	mark := r.Mark()
	for i := range 4 {
		submit(r, c, r.Job(i))
	}
	if c.Tail != 4 {
		r.Fatalf("After four Submits from slot 60, c.Tail is %d; want 4. The tail is a slot index: it wraps to 0 at c.Size (%d).",
			c.Tail, c.Size)
	}
	if !r.WaitFor(34, 300_000) {
		why := explainSQ(r, 60, 8, 1)
		if why == "" {
			why = explainSilence(r, r.Since(mark), c)
		}
		r.Fatalf("The fence page says %d, not 34, after four Submits across the end of the ring: %s.", r.FenceValue(), why)
	}
}

// TestOnARM64: on a weakly ordered CPU the doorbell may reach the device before
// the descriptors and the sequence number, unless a barrier comes between.
func TestOnARM64(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			r, c := setUp(t, cpu.ARM64, seed)
			mark := r.Mark()
			for i := range 4 {
				submit(r, c, r.Job(i))
			}
			if problem := follow(r, 4, func(v uint64) int { return int(v) }); problem != "" {
				why := explainSQ(r, 0, 8, 1)
				if s := explainSilence(r, r.Since(mark), c); why == "" && (strings.Contains(s, "never saw a doorbell") || strings.Contains(s, "no command of 8 bytes")) {
					why = s
				}
				if why != "" {
					r.Fatalf("%s.\n%s.", problem, why)
				}
				r.Fatalf("%s.\nThe device read these descriptors:\n%s"+
					"On arm64 the CPU may make the doorbell visible before earlier stores: a write barrier "+
					"(c.P.Kernel().CPU.WMB()) must come after the descriptors and the sequence number are stored, "+
					"before the doorbell (§7.4).", problem, check.Lines(check.Find(r.Since(mark), trace.Descriptor)))
			}
		})
	}
}
