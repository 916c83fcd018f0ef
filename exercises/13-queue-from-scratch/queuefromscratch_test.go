package queuefromscratch

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 20_000_000 // 20 ms

type rig struct {
	*check.Machine
	pdev  *kernel.PCIDev
	regs  *kernel.IOMem
	iommu bool
}

func setUp(t *testing.T, cfg host.Config) *rig {
	m := check.Boot(t, cfg)
	devs := m.K.Devices()
	if len(devs) != 1 {
		t.Fatalf("check: the kernel found %d PCI functions, want 1", len(devs))
	}
	pdev := devs[0]
	if err := pdev.EnableDevice(); err != nil {
		t.Fatalf("check: pci_enable_device: %v", err)
	}
	pdev.SetMaster()
	regs, err := pdev.IOMap(0)
	if err != nil {
		t.Fatalf("check: pci_iomap: %v", err)
	}
	return &rig{Machine: m, pdev: pdev, regs: regs, iommu: cfg.Kernel.IOMMU}
}

func (r *rig) open(size uint32) (*Queue, []trace.Event, error) {
	var q *Queue
	var err error
	mark := r.Mark()
	r.Do("Open", budget, func() { q, err = Open(r.CPU, r.pdev, r.regs, size) })
	return q, r.Since(mark), err
}

// phys is where the device's access to dma lands.
func (r *rig) phys(dma uint64) (uint64, bool) {
	if !r.iommu {
		return dma, true
	}
	steps := r.M.IOMMU().Walk(dma)
	if len(steps) != sacc.IOPTLevels {
		return 0, false
	}
	leaf := steps[len(steps)-1]
	if leaf.NotRAM || !leaf.Entry.Present() {
		return 0, false
	}
	return leaf.Entry.Addr() | dma&sacc.PageMask, true
}

func TestOpenBehindTheIOMMU(t *testing.T) {
	r := setUp(t, host.Config{Kernel: kernel.Config{IOMMU: true}})
	q, _, err := r.open(8)
	if err != nil {
		r.Fatalf("Open(8) returned an error: %v", err)
	}
	if q == nil {
		r.Fatalf("Open(8) returned a nil *Queue and no error.")
	}
	st := r.M.Device().State()
	if st.Status&sacc.StatusReady == 0 {
		r.Fatalf("Open(8) returned, but the device is not READY (STATUS %#x): wait for READY before returning.", st.Status)
	}
	if st.SQSize != 8 || st.CQSize != 8 {
		r.Fatalf("After Open(8) SQ_SIZE is %d and CQ_SIZE %d; want 8 and 8.", st.SQSize, st.CQSize)
	}
	for _, ring := range []struct {
		name  string
		base  uint64
		bytes uint64
	}{{"SQ", st.SQBase, 8 * sacc.DescriptorSize}, {"CQ", st.CQBase, 8 * sacc.CompletionSize}} {
		if _, ok := r.phys(ring.base); !ok {
			r.Fatalf("After Open, %s_BASE holds %#x, but nothing is mapped for the device there: with the IOMMU on, the "+
				"device needs the DMA address, the second result of DMAAllocCoherent.", ring.name, ring.base)
		}
		if _, ok := r.phys(ring.base + ring.bytes - 1); !ok {
			r.Fatalf("After Open, the %s's last entry, at DMA address %#x, is not mapped for the device: the ring needs "+
				"%d bytes.", ring.name, ring.base+ring.bytes-1, ring.bytes)
		}
	}
}

func TestOpenRefusesBadSizes(t *testing.T) {
	for _, size := range []uint32{0, 1, 6, 8192} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			r := setUp(t, host.Config{})
			inUse := r.K.MemInUse()
			_, evs, err := r.open(size)
			if err == nil {
				r.Fatalf("Open(%d) returned no error: ring sizes are powers of two from 2 to 4096 (§7.5).", size)
			}
			if w := check.Find(evs, trace.RegWrite); len(w) > 0 || r.K.MemInUse() != inUse {
				r.Fatalf("Open(%d) returned an error, but first it wrote registers or allocated memory (%d bytes still allocated):\n%s"+
					"Check the size before anything else: ring sizes are powers of two from 2 to 4096 (§7.5).",
					size, r.K.MemInUse()-inUse, check.Lines(w))
			}
		})
	}
}

func TestOpenGivesUpAndCleansUp(t *testing.T) {
	r := setUp(t, host.Config{Machine: machine.Config{Cost: check.Cost(t, "enable_latency=10000000")}})
	inUse := r.K.MemInUse()
	_, evs, err := r.open(8)
	enabled := check.Find(evs, trace.Enable)
	switch {
	case len(enabled) == 0:
		r.Fatalf("Open(8) never set CTRL.ENABLE (it returned %v).", err)
	case err == nil:
		r.Fatalf("This device takes 10 ms to become READY; Open(8) returned no error. Give up after 100 µs.")
	case r.M.Now()-enabled[0].Time > 250_000:
		r.Fatalf("Open(8) gave up, but %s after ENABLE; it must give up within about 100 µs.", check.Duration(r.M.Now()-enabled[0].Time))
	case r.K.MemInUse() != inUse:
		r.Fatalf("Open(8) gave up, good, but left %d bytes allocated: free the rings before returning the error.", r.K.MemInUse()-inUse)
	}
}

func TestCloseGivesEverythingBack(t *testing.T) {
	r := setUp(t, host.Config{})
	inUse := r.K.MemInUse()
	q, _, err := r.open(16)
	if err != nil {
		r.Fatalf("Open(16) returned an error: %v", err)
	}
	r.Do("Close", budget, func() { q.Close() })
	if st := r.M.Device().State(); st.Ctrl&sacc.CtrlEnable != 0 {
		r.Fatalf("After Close CTRL reads %#x: the device is still enabled, and would DMA into rings that are gone.", st.Ctrl)
	}
	if got := r.K.MemInUse(); got != inUse {
		r.Fatalf("After Close %d bytes are still allocated: free both rings (dma_free_coherent).", got-inUse)
	}
}

// stream copies jobs 64-byte buffers through a queue of size entries, as fast as
// Submit takes them, and checks every rule of the contract as it goes.
func stream(t *testing.T, cfg host.Config, size uint32, jobs int, arch string) {
	cfg.Kernel.IOMMU = true
	r := setUp(t, cfg)
	q, _, err := r.open(size)
	if err != nil || q == nil {
		r.Fatalf("Open(%d) returned %v, %v", size, q, err)
	}
	const n = 64
	srcCPU, srcDMA, err := r.pdev.DMAAllocCoherent(uint64(jobs) * n)
	if err != nil {
		t.Fatal(err)
	}
	dstCPU, dstDMA, err := r.pdev.DMAAllocCoherent(uint64(jobs) * n)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, jobs*n)
	for i := range data {
		data[i] = byte(i/n + 1)
	}
	r.M.RAM().Write(srcCPU, data)
	st := r.M.Device().State()
	sq, ok := r.phys(st.SQBase)
	if !ok {
		r.Fatalf("SQ_BASE %#x is not mapped for the device.", st.SQBase)
	}

	var failure string
	fail := func(format string, a ...any) { failure = fmt.Sprintf(format, a...) }
	type accepted struct {
		id  uint32
		job int
	}
	var inFlight []accepted
	var got []sacc.Completion
	taken := map[uint32]bool{} // req_ids whose completion Reap has handed out
	mark := r.Mark()
	r.Do("the queue", budget, func() {
		next, done := 0, 0
		idle := r.M.Now()
		for done < jobs {
		submit:
			for next < jobs {
				d := sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: srcDMA + uint64(next)*n, Dst: dstDMA + uint64(next)*n,
					Length: n, ReqID: 0xDEAD}
				call := r.Mark()
				id, err := q.Submit(d)
				evs := r.Since(call)
				if err != nil {
					switch {
					case !errors.Is(err, ErrFull):
						fail("Submit returned %q with %d requests in flight: want nil, or an error wrapping ErrFull when the ring "+
							"is full.", err, len(inFlight))
					case len(inFlight) < int(size)-1:
						fail("Submit refused (%v) with only %d requests in flight in a ring of %d: it holds %d.", err, len(inFlight), size, size-1)
					case len(check.Find(evs, trace.CPUWrite, trace.RegWrite)) > 0:
						fail("Submit refused a request with ErrFull, but wrote first:\n%s", check.Lines(check.Find(evs, trace.CPUWrite, trace.RegWrite)))
					}
					break submit
				}
				if len(inFlight) == int(size)-1 {
					fail("Submit accepted a request with %d already in flight in a ring of %d: the ring holds %d, and the "+
						"next doorbell makes tail == head, which the device reads as empty (§7.3).", len(inFlight), size, size-1)
					return
				}
				for _, a := range inFlight {
					if a.id == id {
						fail("Submit gave req_id %#x to job %d while job %d, still in flight, has it: two requests in flight "+
							"with one req_id cannot be told apart.", id, next, a.job)
						return
					}
				}
				inFlight = append(inFlight, accepted{id, next})
				next++
			}
			if failure != "" {
				return
			}
			call := r.Mark()
			k := q.Reap(func(c sacc.Completion) { got = append(got, c) })
			if _, reads := ringrig.Barriers(r.Since(call)); k > 0 && reads == 0 && arch == "arm64" {
				fail("Reap took %d completions with no read barrier between the phase loads and the body loads: on arm64 "+
					"the body may be loaded before the phase and hold what the slot held before (§7.2).", k)
				return
			}
			for range k {
				c := got[done]
				if len(inFlight) == 0 {
					fail("Reap handed done %+v when no request was in flight: each completion once.", c)
					return
				}
				want := inFlight[0]
				if taken[c.ReqID] && c.ReqID != want.id {
					fail("Reap handed done %+v, a completion it had handed out before: that is an entry from the last lap, "+
						"taken for new. On each lap the device writes the other phase: does Reap flip the phase it expects "+
						"when the head wraps to 0 (§7.2)?", c)
					return
				}
				if c.ReqID != want.id || c.Status != sacc.StatusOK {
					fail("Reap handed done %+v; want the completion of job %d, which Submit gave req_id %#x, status OK. "+
						"Completions come back in ring order, each once, with the body the device wrote.", c, want.job, want.id)
					return
				}
				taken[c.ReqID] = true
				inFlight = inFlight[1:]
				done++
			}
			if k > 0 {
				idle = r.M.Now()
			} else if r.M.Now()-idle > 200_000 {
				fail("%d of %d jobs completed, %d are in flight, and nothing has come back for 200 µs.", done, jobs, len(inFlight))
				return
			} else {
				r.CPU.Relax()
			}
		}
	})
	// Every descriptor was in memory before the doorbell that handed it over
	// left the CPU, and stayed as written until the device fetched it. The
	// doorbell is a posted write: the k-th SQ_TAIL the CPU issued
	// (cpu_mmio_write) is the k-th the device saw, and a store still in the
	// store buffer at the issue was not ordered before it, even if it drained
	// before the doorbell landed. Checked before the outcome: an ordering
	// mistake is the cause of whatever the device then did with the slot.
	evs := r.Since(mark)
	issues := ringrig.IssuedDoorbells(evs)
	landed := 0
	for i, ev := range evs {
		if ev.Kind == trace.RegWrite && ev.Args[0] == sacc.RegSQTail {
			landed++
		}
		if ev.Kind != trace.Doorbell || landed == 0 || landed > len(issues) {
			continue
		}
		issue := issues[landed-1]
		prev := uint32(0)
		for j := i - 1; j >= 0; j-- {
			if evs[j].Kind == trace.Doorbell {
				prev = uint32(evs[j].Args[0])
				break
			}
		}
		for s := prev; s != uint32(ev.Args[0]); s = (s + 1) % size {
			lo, hi := sq+uint64(s)*sacc.DescriptorSize, sq+uint64(s+1)*sacc.DescriptorSize
			for _, later := range evs {
				if later.Seq <= issue.Seq {
					continue
				}
				if later.Kind == trace.Fetch && uint32(later.Args[0]) == s && later.Seq > ev.Seq {
					break
				}
				if later.Kind == trace.CPUWrite && later.Args[0] >= lo && later.Args[0] < hi {
					r.Fatalf("On %s the doorbell\n  %s\nhanded slot %d to the device, but a store into that slot landed only "+
						"after it was issued (%s):\n  %s\nThe descriptor must be in memory before the doorbell is issued; "+
						"a barrier after it comes too late (§7.4).",
						arch, ev.String(), s, strings.TrimSpace(issue.String()), later.String())
				}
			}
		}
	}
	if failure != "" {
		r.Fatalf("%s", failure)
	}
	out := make([]byte, jobs*n)
	r.M.RAM().Read(dstCPU, out)
	if !bytes.Equal(out, data) {
		for i := range out {
			if out[i] != data[i] {
				r.Fatalf("Every job completed, but job %d's destination holds %#x at byte %d, not %#x.", i/n, out[i], i%n, data[i])
			}
		}
	}
}

func TestStreamOnX86(t *testing.T) {
	stream(t, host.Config{}, 8, 60, "x86")
}

func TestStreamOnARM64(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			// Loads may be performed up to 2 µs early when nothing orders them.
			stream(t, host.Config{Machine: machine.Config{Seed: seed}, CPU: cpu.Config{Arch: cpu.ARM64, MaxHoist: 2_000}}, 4, 40, "arm64")
		})
	}
}
