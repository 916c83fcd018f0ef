package fencewait

import (
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/fencerig"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/sim"
)

const (
	budget sim.Time = 2_000_000 // 2 ms of virtual time: far more than any wait here needs
	limit  sim.Time = 100_000   // what the tests give Wait: the jobs need a few µs each
)

// call runs the learner's Wait under the watchdog and returns what it returned
// and how long it took, in virtual time. after, if not nil, runs right after
// Wait returns, with no CPU operation between.
func call(r *fencerig.Rig, point uint64, lim sim.Time, after func()) (v uint64, took sim.Time, err error) {
	start := r.M.Now()
	r.Do(fmt.Sprintf("Wait(%d)", point), budget, func() {
		v, err = Wait(Fence{P: r.P, VA: r.Fence.VA}, point, lim)
		if after != nil {
			after()
		}
	})
	return v, r.M.Now() - start, err
}

// TestEveryPoint: four jobs with a fence each, and a wait for each point.
func TestEveryPoint(t *testing.T) {
	r := fencerig.Up(t, cpu.Config{Arch: cpu.X86}, 1)
	for i := range 4 {
		r.Submit(uint64(i+1), r.Job(i))
	}
	calls := r.P.Stats.Syscalls
	for point := uint64(1); point <= 4; point++ {
		v, took, err := call(r, point, limit, nil)
		if err != nil {
			r.Fatalf("Wait(%d) returned the error %q after %d ns. The device writes each point into the fence page as its job "+
				"finishes, a few µs apart (the page says %d now). Wait must look at the value (f.P.Load64(f.VA)) again and again, "+
				"with f.P.Kernel().CPU.Relax() between, until it has reached the point or the limit (%d ns) has passed.",
				point, err, took, r.FenceValue(), limit)
		}
		if v < point || !r.Done(int(point-1)) {
			r.Fatalf("Wait(%d) returned %d at t=%d ns, but the fence page said %d and job %d was not in place yet. "+
				"Wait may return only once the value it read from the fence page is at least the point.",
				point, v, r.M.Now(), r.FenceValue(), point)
		}
	}
	if n := r.P.Stats.Syscalls - calls; n != 0 {
		r.Fatalf("Wait made %d system calls; the fence page is the process's own memory, and waiting on it needs none.", n)
	}
}

// TestPointsPassed: one fence for each batch of four jobs, so the value goes
// from 0 to 4 to 8 and never says 2, 3, 5, 6 or 7.
func TestPointsPassed(t *testing.T) {
	r := fencerig.Up(t, cpu.Config{Arch: cpu.X86}, 1)
	r.Submit(4, r.Job(0), r.Job(1), r.Job(2), r.Job(3))
	r.Submit(8, r.Job(4), r.Job(5), r.Job(6), r.Job(7))
	for _, tc := range []struct{ point, value uint64 }{{2, 4}, {6, 8}} {
		v, _, err := call(r, tc.point, limit, nil)
		switch {
		case (err != nil || v < tc.point) && r.FenceValue() >= tc.point:
			r.Fatalf("Wait(%d) returned %d, %v, but the fence page went from %d to %d when that batch finished, and says %d now. "+
				"A fence value passes points, it does not stop at each: one fence for a batch of four jobs moves it "+
				"from %d to %d, and %d is never written. The point is reached when value >= point, not when value == point.",
				tc.point, v, err, tc.value-4, tc.value, r.FenceValue(), tc.value-4, tc.value, tc.point)
		case err != nil || v < tc.point:
			r.Fatalf("Wait(%d) returned %d, %v while the batch was still running (the fence page says %d). Wait must look at "+
				"the value again and again, with f.P.Kernel().CPU.Relax() between, until it has reached the point.",
				tc.point, v, err, r.FenceValue())
		}
	}
	v, took, err := call(r, 3, limit, nil)
	if err != nil || v != 8 {
		r.Fatalf("Wait(3) returned %d, %v; the fence page says 8, a point long passed.", v, err)
	}
	if took > 1000 {
		r.Fatalf("Wait(3) took %d ns although the fence page already said 8: look at the value first, and wait only if it "+
			"has not reached the point yet; a point already passed costs one load.", took)
	}
}

// TestGivesUp: a point no fence will ever write.
func TestGivesUp(t *testing.T) {
	r := fencerig.Up(t, cpu.Config{Arch: cpu.X86}, 1)
	r.Submit(1, r.Job(0))
	const lim = 50_000
	v, took, err := call(r, 100, lim, nil)
	switch {
	case err == nil:
		r.Fatalf("Wait(100) returned %d and no error, but the fence page says %d and nothing more is coming. "+
			"Once limit has passed, return an error.", v, r.FenceValue())
	case took < lim:
		r.Fatalf("Wait(100) gave up after %d ns; the limit was %d ns. Wait for the whole limit before giving up.", took, lim)
	case took > lim+5_000:
		r.Fatalf("Wait(100) gave up only after %d ns; the limit was %d ns. Compare the time with the deadline on every turn of the loop.", took, lim)
	}
}

// TestReadBarrierOnARM64: on arm64 a load that directly follows another, with no
// rmb between, may be performed before it. SACC writes a fence about 2 µs after
// the work (the fence is one more command); a GPU writes it right behind the
// work, where the CPU's own reordering window is enough. The test widens that
// window (MaxHoist) to 5 µs to stand for it, then reads each job's output right
// after Wait returns, as the caller would.
func TestReadBarrierOnARM64(t *testing.T) {
	want := fencerig.Pattern()
	first := uint64(0)
	for i := 7; i >= 0; i-- {
		first = first<<8 | uint64(want[i])
	}
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			r := fencerig.Up(t, cpu.Config{Arch: cpu.ARM64, MaxHoist: 5000}, seed)
			for i := range 4 {
				r.Submit(uint64(i+1), r.Job(i))
			}
			for point := uint64(1); point <= 4; point++ {
				var got uint64
				v, _, err := call(r, point, limit, func() { got = r.P.Load64(r.Out(int(point - 1))) })
				if err != nil || v < point {
					r.Fatalf("Wait(%d) returned %d, %v; the fence page says %d.", point, v, err, r.FenceValue())
				}
				if got != first && r.Done(int(point-1)) {
					r.Fatalf("Wait(%d) returned %d, and job %d's output, read right after it, was still %#x, not the bytes the "+
						"job copied (%#x), which were in memory. On arm64 a load that follows another load with nothing between "+
						"may be performed before it: the caller's read of the output went ahead of your read of the fence. "+
						"End Wait with a read barrier, f.P.Kernel().CPU.RMB(), once the value has reached the point.",
						point, v, point, got, first)
				}
			}
		})
	}
}
