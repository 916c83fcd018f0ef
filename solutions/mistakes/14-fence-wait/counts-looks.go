// Exercise 14-fence-wait: wait on a fence, as a GPU runtime does.
//
// A GPU does not tell its driver "job 7 is done" with a completion entry per
// job. After the work, the channel runs a fence command that writes a sequence
// number into memory (NVIDIA's semaphore release, AMD's RELEASE_MEM, Intel's
// breadcrumb), and the numbers only grow. Waiting for a job is waiting until
// that number has reached the job's point (chapter 14):
//
//   - read the 64-bit fence value at f.VA with f.P.Load64: the device writes it
//     by DMA, the process only reads it;
//   - it has reached point when value >= point. Not ==: one fence write can
//     pass several points (one fence for a batch of four jobs moves the value
//     from 4 to 8), and a wait for exactly 6 would wait for ever;
//   - once it has, a read barrier, f.P.Kernel().CPU.RMB(), then return: the
//     caller's next loads read what the jobs wrote, and on arm64 a load that
//     follows another with nothing between may be performed before it, and
//     see the buffer as it was before the fence (§7.4; HSA calls this wait an
//     acquire);
//   - between two looks, f.P.Kernel().CPU.Relax() (cpu_relax);
//   - give up with an error once limit nanoseconds of virtual time have passed
//     since the call (f.P.Kernel().CPU.Now() is the time): a fence that never
//     comes must not hang its waiter. The kernel's waits on a dma_fence take a
//     timeout for the same reason.
//
// Wait makes no system call: the fence page is ordinary memory of the process.
//
// Edit this file, then run:
//
//	go test ./exercises/14-fence-wait/
//	saccbook check 14-fence-wait
package fencewait

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/sim"
)

// Fence is a fence page as the process sees it.
type Fence struct {
	P  *kernel.Process
	VA uint64 // user address of the 64-bit value the device writes
}

// Wait spins until the fence has reached point, or until limit ns have passed.
// It returns the value it saw (at least point), or an error when it gave up.
func Wait(f Fence, point uint64, limit sim.Time) (uint64, error) {
	c := f.P.Kernel().CPU
	// Gives up after a number of looks, whatever time they took.
	for range 100 {
		if v := f.P.Load64(f.VA); v >= point {
			c.RMB()
			return v, nil
		}
		c.Relax()
	}
	return 0, fmt.Errorf("fence point %d not reached within %d ns", point, limit)
}
