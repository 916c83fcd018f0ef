package queue

import (
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 50_000_000 // 50 ms: 48 copies need about 0.2 ms

const (
	size  = 16
	jobsN = 48
	n     = 4096
)

// perJob is the device's own time for one 4 KiB copy without an IOMMU, from the
// cost model: fetch the descriptor, decode it, read the source, write the
// destination.
func perJob(r *ringrig.Rig) sim.Time {
	c := r.M.Cost()
	return c.DMAReadLatency + c.Transfer(sacc.DescriptorSize) + c.DeviceCommand +
		c.DMAReadLatency + c.Transfer(n) + c.Transfer(n) + c.DMAWriteLatency
}

type result struct {
	st        Stats
	err       error
	took      sim.Time
	evs       []trace.Event
	src, dst  uint64
	doorbells int
	per       sim.Time
	r         *ringrig.Rig
}

// run copies 48 pages, page i full of byte i+1, with the learner's Run.
func run(t *testing.T, batch int, jobs func(src, dst uint64) []Job) result {
	r := ringrig.Up(t, host.Config{}, size)
	src, err := r.K.AllocPages(jobsN * n)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := r.K.AllocPages(jobsN * n)
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint64(jobsN) {
		r.M.RAM().Fill(src+i*n, n, byte(i+1))
	}
	list := jobs(src, dst)
	q := &Ring{SQ: r.SQ, CQ: r.CQ, Size: size, Phase: 1, NextID: 100}
	res := result{r: r, src: src, dst: dst, per: perJob(r)}
	mark := r.Mark()
	start := r.M.Now()
	r.Do("Run", budget, func() { res.st, res.err = Run(r.CPU, r.Regs, q, list, batch) })
	res.took = r.M.Now() - start
	res.evs = r.Since(mark)
	for _, ev := range check.Find(res.evs, trace.RegWrite) {
		if ev.Args[0] == sacc.RegSQTail {
			res.doorbells++
		}
	}
	return res
}

func pages(src, dst uint64) []Job {
	jobs := make([]Job, jobsN)
	for i := range jobs {
		jobs[i] = Job{Src: src + uint64(i)*n, Dst: dst + uint64(i)*n, Length: n}
	}
	return jobs
}

// stalled explains a run that did not finish.
func (res result) stalled() string {
	full := check.Find(res.evs, trace.CQFull)
	heads := 0
	for _, ev := range check.Find(res.evs, trace.RegWrite) {
		if ev.Args[0] == sacc.RegCQHead || ev.Args[0] == sacc.RegCQHeadDB {
			heads++
		}
	}
	switch {
	case len(full) > 0 && heads == 0:
		return fmt.Sprintf("\nThe device stalled with its CQ full (after %d completions) and CQ_HEAD was never written: hand the slots "+
			"back with regs.Writel(sacc.RegCQHead, q.Head) after each pass of reaping (§7.3).", len(check.Find(res.evs, trace.CQPost)))
	case len(full) > 0:
		return "\nThe device stalled with its CQ full: the CQ_HEAD values it was given did not free the slots. CQ_HEAD is the slot you will read next."
	}
	// Descriptors written between two doorbells, counted by the slots stored to.
	slots := map[uint64]bool{}
	sq, end := res.r.SQ, res.r.SQ+size*sacc.DescriptorSize
	for _, ev := range res.evs {
		switch {
		case ev.Kind == trace.CPUWrite && ev.Args[0] >= sq && ev.Args[0] < end:
			slots[(ev.Args[0]-sq)/sacc.DescriptorSize] = true
		case ev.Kind == trace.RegWrite && ev.Args[0] == sacc.RegSQTail:
			if len(slots) > size-1 {
				return "\nMore than Size − 1 descriptors were written before one doorbell: the ring holds at most Size − 1 in flight " +
					"(§7.3), and the rest overwrote slots the device had not read yet, or made the ring look empty."
			}
			slots = map[uint64]bool{}
		}
	}
	if errs := check.Find(res.evs, trace.DeviceError); len(errs) > 0 {
		return "\nThe device halted:\n" + check.Lines(errs) + "An SQ_TAIL of Size or more (error 5)? More than Size − 1 descriptors in flight?"
	}
	return ""
}

func TestBatchSizes(t *testing.T) {
	for _, tc := range []struct {
		batch, effective int
		slack            float64 // Total may exceed 48 jobs of device time by this factor
	}{
		{1, 1, 1.25},
		{4, 4, 1.10},
		{15, 15, 1.05},
		{40, 15, 1.05},
	} {
		t.Run(fmt.Sprintf("batch%d", tc.batch), func(t *testing.T) {
			res := run(t, tc.batch, pages)
			r, st := res.r, res.st
			posted := check.Find(res.evs, trace.CQPost)
			if res.err != nil {
				r.Fatalf("Run(batch %d) returned an error: %v (the device posted %d completions)%s", tc.batch, res.err, len(posted), res.stalled())
			}
			if len(posted) != jobsN {
				r.Fatalf("Run(batch %d) returned nil, but the device posted %d completions for %d jobs.%s", tc.batch, len(posted), jobsN, res.stalled())
			}
			for i := range uint64(jobsN) {
				if b := r.M.RAM().Load(res.dst+i*n, 1); b != i+1 {
					r.Fatalf("After Run, destination page %d starts with %#x, not %#x: job %d was not copied.", i, b, i+1, i)
				}
			}
			want := (jobsN + tc.effective - 1) / tc.effective
			if res.doorbells != want {
				r.Fatalf("Run(batch %d) rang the doorbell %d times for %d jobs; want %d: one per batch of %d. "+
					"(At most Size − 1 = %d descriptors may be in flight.)", tc.batch, res.doorbells, jobsN, want, tc.effective, size-1)
			}
			if st.Doorbells != res.doorbells {
				r.Fatalf("Stats.Doorbells is %d, but the device saw %d SQ_TAIL writes.", st.Doorbells, res.doorbells)
			}
			if d := int64(st.Total) - int64(res.took); d > 0 || -d > int64(res.took/100+500) {
				r.Fatalf("Stats.Total is %d ns, but Run took %d ns of virtual time: measure with c.Now() at the start and at the end.", st.Total, res.took)
			}
			ceiling := sim.Time(float64(jobsN*res.per) * tc.slack)
			if st.Total > ceiling {
				r.Fatalf("Run(batch %d) took %d ns for %d jobs. The device needs %d ns for each (%d in all), and a queue that keeps "+
					"it busy finishes within %d ns. Is Run waiting longer than it must: a fixed delay, a doorbell per job, a batch "+
					"reaped only after extra waiting?", tc.batch, st.Total, jobsN, res.per, jobsN*res.per, ceiling)
			}
			t.Logf("batch %d: %d ns in all (%d MB/s), latency mean %d ns, max %d ns, %d doorbells",
				tc.batch, st.Total, uint64(jobsN*n)*1000/uint64(max(st.Total, 1)), st.MeanLatency, st.MaxLatency, st.Doorbells)
			// Latency: a job waits for the jobs ahead of it in its batch.
			meanFloor := sim.Time(0.8 * float64(res.per) * float64(tc.effective+1) / 2)
			maxFloor := sim.Time(0.8 * float64(res.per) * float64(tc.effective))
			// And no more than that: the job's wait is the jobs ahead of it, not the
			// whole batch, nor the run so far.
			meanCeiling := sim.Time(1.25*float64(res.per)*float64(tc.effective+1)/2) + 1_000
			maxCeiling := sim.Time(1.25*float64(res.per)*float64(tc.effective)) + 1_000
			if st.MeanLatency < meanFloor || st.MaxLatency < maxFloor || st.MaxLatency < st.MeanLatency || st.MaxLatency > st.Total ||
				st.MeanLatency > meanCeiling || st.MaxLatency > maxCeiling {
				r.Fatalf("Run(batch %d) measured a mean latency of %d ns and a maximum of %d ns (Total %d ns). In a batch of %d the "+
					"device runs one job after another, %d ns each, so the mean must be between %d and %d ns and the maximum "+
					"between %d and %d ns. A job's latency runs from just before its descriptor is written to the moment Run reads "+
					"its completion: measured from another moment (the start of Run, the end of the batch), it says nothing about "+
					"that job.", tc.batch, st.MeanLatency, st.MaxLatency, st.Total, tc.effective, res.per,
					meanFloor, meanCeiling, maxFloor, maxCeiling)
			}
		})
	}
}

// TestFailedJob: a completion with an error status makes Run return an error.
func TestFailedJob(t *testing.T) {
	res := run(t, 4, func(src, dst uint64) []Job {
		jobs := pages(src, dst)[:6]
		jobs[2].Length = 0 // invalid length: status 3
		return jobs
	})
	if res.err == nil {
		res.r.Fatalf("Job 2 had length 0 and completed with status 3 (invalid length), yet Run returned nil. Check each completion's status.")
	}
}
