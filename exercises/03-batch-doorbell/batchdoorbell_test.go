package batchdoorbell

import (
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

// budget is how much virtual time one SubmitBatch may take: a few dozen stores,
// a barrier and one posted write, far less than this.
const budget sim.Time = 1_000_000

// ringSize is SQ_SIZE and CQ_SIZE in every test.
const ringSize = 8

// rig is a booted machine whose device is READY on an 8-slot ring.
type rig struct {
	*check.Machine
	regs *kernel.IOMem
	q    Queue
}

func setUp(t *testing.T, cfg host.Config) *rig {
	rr := ringrig.Up(t, cfg, ringSize)
	return &rig{Machine: rr.Machine, regs: rr.Regs, q: Queue{SQ: rr.SQ, Size: ringSize}}
}

// settle lets the device finish and hands every completion slot back.
func (r *rig) settle() {
	r.CPU.Delay(40_000)
	if st := r.M.Device().State(); st.Status&sacc.StatusReady != 0 && st.CQTail != st.CQHead {
		r.regs.Writel(sacc.RegCQHeadDB, st.CQTail)
	}
}

// advance submits n NOPs the right way, one at a time, and consumes them: the
// tail moves on and nothing stays in flight.
func (r *rig) advance(n int) {
	var b [sacc.DescriptorSize]byte
	for i := range n {
		sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 0x100 + uint32(i)}.Encode(b[:])
		r.CPU.StoreBytes(r.q.SQ+uint64(r.q.Tail)*sacc.DescriptorSize, b[:])
		r.CPU.WMB()
		r.q.Tail = (r.q.Tail + 1) % r.q.Size
		r.regs.Writel(sacc.RegSQTail, r.q.Tail)
		r.settle()
	}
}

func nops(first uint32, n int) []sacc.Descriptor {
	out := make([]sacc.Descriptor, n)
	for i := range out {
		out[i] = sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: first + uint32(i)}
	}
	return out
}

// submit runs the learner's SubmitBatch, lets the device work, and returns what
// the machine saw meanwhile.
func (r *rig) submit(descs []sacc.Descriptor) ([]trace.Event, error) {
	var err error
	mark := r.Mark()
	r.Do("SubmitBatch", budget, func() { err = SubmitBatch(r.CPU, r.regs, &r.q, descs) })
	r.settle()
	return r.Since(mark), err
}

func doorbells(evs []trace.Event) []uint32 {
	var out []uint32
	for _, ev := range check.Find(evs, trace.RegWrite) {
		if ev.Args[0] == sacc.RegSQTail {
			out = append(out, uint32(ev.Args[2]))
		}
	}
	return out
}

// fetched lists "slot: req_id" for every descriptor the device read.
func fetched(evs []trace.Event) (slots []uint32, ids []uint32) {
	for _, ev := range check.Find(evs, trace.Fetch, trace.Descriptor) {
		if ev.Kind == trace.Fetch {
			slots = append(slots, uint32(ev.Args[0]))
		} else {
			ids = append(ids, uint32(ev.Args[0]))
		}
	}
	return slots, ids
}

func hex(ids []uint32) string {
	var s []string
	for _, id := range ids {
		s = append(s, fmt.Sprintf("%#x", id))
	}
	return "[" + strings.Join(s, " ") + "]"
}

// checkBatch is what every accepted batch shows: one doorbell with the tail
// after the last descriptor, and the device finding each descriptor in its slot.
func (r *rig) checkBatch(evs []trace.Event, err error, descs []sacc.Descriptor, start, inFlight uint32, arch string) {
	n := uint32(len(descs))
	end := (start + n) % ringSize
	if err != nil {
		r.Fatalf("SubmitBatch returned an error: %v\nThe batch fits: %d descriptors, tail %d, %d already in flight, %d slots.",
			err, n, start, inFlight, ringSize)
	}
	if errs := check.Find(evs, trace.DeviceError); len(errs) > 0 {
		msg := fmt.Sprintf("The device halted with error %d (§7.6).", errs[0].Args[0])
		if errs[0].Args[0] == uint64(sacc.StatusDoorbell) {
			msg += fmt.Sprintf(" The doorbell was written with %v, but SQ_SIZE is %d: the tail must wrap to 0 after slot %d.",
				doorbells(evs), ringSize, ringSize-1)
		}
		r.Fatalf("%s", msg)
	}
	dbs := doorbells(evs)
	switch {
	case len(dbs) == 0:
		r.Fatalf("SubmitBatch returned nil, but the device never heard a doorbell: write the tail to SQ_TAIL " +
			"(sacc.RegSQTail) after the last descriptor.")
	case len(dbs) > 1:
		r.Fatalf("SubmitBatch rang the doorbell %d times (values %v) for a batch of %d: write every descriptor first, "+
			"then ring once, with the tail after the last one.", len(dbs), dbs, n)
	case dbs[0] != end:
		r.Fatalf("The doorbell was written with %d, want %d: %d descriptors from slot %d end before slot %d (wrapped at SQ_SIZE, %d).",
			dbs[0], end, n, start, end, ringSize)
	}
	if late, bell, _ := ringrig.LateStores(evs, r.q.SQ, ringSize, start, n); len(late) > 0 {
		r.Fatalf("The doorbell overtook the descriptor stores: the CPU issued it\n  %s\nwhile %d stores into the batch's slots "+
			"were still in the store buffer or made after it; they landed in memory only after it, the first:\n  %s\n"+
			"A barrier after the doorbell comes too late: the device may fetch the slots the moment the doorbell lands (§7.4): "+
			"put c.WMB() after the last store and before the doorbell (regs.Writel also orders them; regs.WritelRelaxed does not).",
			bell, len(late), late[0])
	}
	if r.q.Tail != end || r.q.InFlight != inFlight+n {
		r.Fatalf("After SubmitBatch, q.Tail is %d and q.InFlight %d; want %d and %d: the queue must remember where the "+
			"next batch goes and how many descriptors are out.", r.q.Tail, r.q.InFlight, end, inFlight+n)
	}
	slots, ids := fetched(evs)
	var wantSlots, wantIDs []uint32
	for i, d := range descs {
		wantSlots = append(wantSlots, (start+uint32(i))%ringSize)
		wantIDs = append(wantIDs, d.ReqID)
	}
	if fmt.Sprint(slots) != fmt.Sprint(wantSlots) || hex(ids) != hex(wantIDs) {
		why := "Each descriptor goes into the next slot, at SQ + 32*slot, wrapping after slot 7."
		if arch != "" {
			why = "On this " + arch + " CPU some descriptor stores were still in the store buffer when the device read " +
				"the ring: the doorbell overtook them. Put c.WMB() after the last store and before the doorbell."
		}
		r.Fatalf("The device fetched slots %v and found req_ids %s,\nwant slots %v with req_ids %s.\n%s",
			slots, hex(ids), wantSlots, hex(wantIDs), why)
	}
}

func TestBatchOfFour(t *testing.T) {
	r := setUp(t, host.Config{})
	descs := nops(0x10, 4)
	evs, err := r.submit(descs)
	r.checkBatch(evs, err, descs, 0, 0, "")
}

func TestBatchWraps(t *testing.T) {
	r := setUp(t, host.Config{})
	r.advance(6)
	descs := nops(0x20, 4)
	evs, err := r.submit(descs)
	r.checkBatch(evs, err, descs, 6, 0, "")
}

func TestBatchFillsTheRing(t *testing.T) {
	r := setUp(t, host.Config{})
	r.advance(2)
	descs := nops(0x30, ringSize-1)
	evs, err := r.submit(descs)
	r.checkBatch(evs, err, descs, 2, 0, "")

	// Three of those seven now count as not yet consumed: four slots are free.
	r.q.InFlight = 3
	descs = nops(0x40, 4)
	evs, err = r.submit(descs)
	r.checkBatch(evs, err, descs, 1, 3, "")
}

func TestBatchTooBig(t *testing.T) {
	for _, tc := range []struct {
		inFlight uint32
		n        int
	}{{0, ringSize}, {3, 5}, {ringSize - 1, 1}} {
		t.Run(fmt.Sprintf("%d in flight, batch of %d", tc.inFlight, tc.n), func(t *testing.T) {
			r := setUp(t, host.Config{})
			r.advance(3)
			r.q.InFlight = tc.inFlight
			before := r.q
			evs, err := r.submit(nops(0x50, tc.n))
			free := ringSize - 1 - tc.inFlight
			if err == nil {
				why := ""
				if tc.inFlight == 0 && tc.n == ringSize {
					why = "\nWith all 8 slots filled the tail comes back to the device's head, and tail == head means " +
						"an empty ring: the device would see no work at all (§7.3). At most SQ_SIZE-1 may be in flight."
				}
				r.Fatalf("A batch of %d with %d already in flight in a ring of %d: only %d slots are free, yet SubmitBatch returned nil.%s",
					tc.n, tc.inFlight, ringSize, free, why)
			}
			if !errors.Is(err, ErrRingFull) {
				r.Fatalf("SubmitBatch refused a batch that does not fit, good, but with %q: want an error that wraps ErrRingFull "+
					"(fmt.Errorf(\"...: %%w\", ErrRingFull)), so a caller can wait for room and try again.", err)
			}
			var touched []string
			for _, ev := range check.Find(evs, trace.CPUWrite, trace.RegWrite) {
				if ev.Kind == trace.RegWrite && ev.Args[0] == sacc.RegCQHeadDB {
					continue // the test's own, afterwards
				}
				touched = append(touched, ev.String())
			}
			if len(touched) > 0 {
				r.Fatalf("SubmitBatch refused the batch but wrote first:\n  %s\nA refused batch is refused whole: check "+
					"the room before the first store.", strings.Join(touched, "\n  "))
			}
			if r.q != before {
				r.Fatalf("SubmitBatch refused the batch but changed the queue: %+v, was %+v.", r.q, before)
			}
		})
	}
}

func TestEmptyBatch(t *testing.T) {
	r := setUp(t, host.Config{})
	r.advance(2)
	before := r.q
	evs, err := r.submit(nil)
	if err != nil {
		r.Fatalf("An empty batch returned %v: nothing to do is not an error.", err)
	}
	if dbs := doorbells(evs); len(dbs) > 0 || r.q != before {
		r.Fatalf("An empty batch rang the doorbell (%v) or changed the queue (%+v, was %+v): it should do nothing.", dbs, r.q, before)
	}
}

func TestBatchOrdersTheDoorbell(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("arm64 seed %d", seed), func(t *testing.T) {
			r := setUp(t, host.Config{Machine: machine.Config{Seed: seed}, CPU: cpu.Config{Arch: cpu.ARM64}})
			for i := range 4 {
				start := r.q.Tail
				descs := nops(0x60+uint32(5*i), 5)
				evs, err := r.submit(descs)
				r.checkBatch(evs, err, descs, start, 0, "arm64 (weakly ordered)")
				r.q.InFlight = 0 // the test consumed them
			}
		})
	}
}
