package ringdoorbell

import (
	"bytes"
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

// budget is how much virtual time one Submit may take: a few stores, a barrier
// and one posted write, far less than this.
const budget sim.Time = 1_000_000

// ringSize is SQ_SIZE and CQ_SIZE in every test.
const ringSize = 8

// rig is a booted machine whose device is READY on an 8-slot ring: the state a
// driver is in after probe, when the first job arrives.
type rig struct {
	*check.Machine
	pdev *kernel.PCIDev
	regs *kernel.IOMem
	q    Queue
}

func setUp(t *testing.T, cfg host.Config) *rig {
	rr := ringrig.Up(t, cfg, ringSize)
	return &rig{Machine: rr.Machine, pdev: rr.PDev, regs: rr.Regs, q: Queue{SQ: rr.SQ, Size: ringSize}}
}

// settle lets the device finish what it was given and hands every completion
// slot back (CQ_HEAD), so the rings never fill.
func (r *rig) settle() {
	r.CPU.Delay(20_000)
	if st := r.M.Device().State(); st.Status&sacc.StatusReady != 0 && st.CQTail != st.CQHead {
		r.regs.Writel(sacc.RegCQHeadDB, st.CQTail)
	}
}

// advance submits n NOPs the right way, so that the learner's Submit starts
// somewhere other than slot 0.
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

// submit runs the learner's Submit, lets the device work, and returns what the
// machine saw meanwhile.
func (r *rig) submit(d sacc.Descriptor) ([]trace.Event, error) {
	var err error
	mark := r.Mark()
	r.Do("Submit", budget, func() { err = Submit(r.CPU, r.regs, &r.q, d) })
	r.settle()
	return r.Since(mark), err
}

// doorbells are the values written to SQ_TAIL.
func doorbells(evs []trace.Event) []uint32 {
	var out []uint32
	for _, ev := range check.Find(evs, trace.RegWrite) {
		if ev.Args[0] == sacc.RegSQTail {
			out = append(out, uint32(ev.Args[2]))
		}
	}
	return out
}

// fetched is what the device found in the ring: the slot and the descriptor.
type fetch struct {
	slot uint32
	d    sacc.Descriptor
}

func fetches(evs []trace.Event) []fetch {
	var out []fetch
	for _, ev := range check.Find(evs, trace.Fetch, trace.Descriptor) {
		switch ev.Kind {
		case trace.Fetch:
			out = append(out, fetch{slot: uint32(ev.Args[0])})
		case trace.Descriptor:
			if len(out) > 0 {
				out[len(out)-1].d = sacc.Descriptor{ReqID: uint32(ev.Args[0]), Opcode: uint16(ev.Args[1]),
					Length: uint32(ev.Args[2]), Flags: uint16(ev.Args[3])}
			}
		}
	}
	return out
}

func describe(d sacc.Descriptor) string {
	return fmt.Sprintf("req_id %#x, opcode %s, length %d, flags %#x", d.ReqID, sacc.OpName(d.Opcode), d.Length, d.Flags)
}

// checkSubmitted is what every good Submit shows: one doorbell with the new
// tail, the device fetching that slot and finding exactly d there.
func (r *rig) checkSubmitted(evs []trace.Event, err error, d sacc.Descriptor, slot uint32, arch string) {
	next := (slot + 1) % ringSize
	if err != nil {
		r.Fatalf("Submit returned an error: %v\nThe queue was fine: tail %d in a ring of %d slots.", err, slot, ringSize)
	}
	if errs := check.Find(evs, trace.DeviceError); len(errs) > 0 {
		code := errs[0].Args[0]
		msg := fmt.Sprintf("The device halted with error %d (§7.6).", code)
		if code == uint64(sacc.StatusDoorbell) {
			msg += fmt.Sprintf(" The doorbell was written with %v, but SQ_SIZE is %d: after slot %d the tail must wrap to 0.",
				doorbells(evs), ringSize, ringSize-1)
		}
		r.Fatalf("%s", msg)
	}
	dbs := doorbells(evs)
	switch {
	case len(dbs) == 0:
		r.Fatalf("Submit returned nil, but the device never heard a doorbell: write the new tail to SQ_TAIL, " +
			"BAR0 offset 0x1000 (sacc.RegSQTail), with a 32-bit write.")
	case len(dbs) > 1:
		r.Fatalf("Submit rang the doorbell %d times (values %v) for one descriptor: one write of the new tail is enough.", len(dbs), dbs)
	case dbs[0] == slot && slot != next:
		r.Fatalf("The doorbell was written with %d: that is the slot of the descriptor itself. The tail is the slot after it, %d: "+
			"the device takes every slot before the tail (§5.1).", dbs[0], next)
	case dbs[0] != next:
		r.Fatalf("The doorbell was written with %d, want %d: the slot after the new descriptor (slot %d), wrapped at SQ_SIZE (%d).",
			dbs[0], next, slot, ringSize)
	}
	if late, bell, _ := ringrig.LateStores(evs, r.q.SQ, ringSize, slot, 1); len(late) > 0 {
		r.Fatalf("The doorbell overtook the descriptor stores: the CPU issued it\n  %s\nwhile %d stores into slot %d were "+
			"still in the store buffer or made after it; they landed in memory only after it, the first:\n  %s\n"+
			"A barrier after the doorbell comes too late: the device may fetch the slot the moment the doorbell lands (§7.4). "+
			"Make the stores visible first: c.WMB() between the stores and the doorbell (regs.Writel also orders them; "+
			"regs.WritelRelaxed does not).", bell, len(late), slot, late[0])
	}
	if r.q.Tail != next {
		r.Fatalf("The device got the right doorbell, but after Submit q.Tail is %d, want %d: the next Submit would write "+
			"into the wrong slot.", r.q.Tail, next)
	}
	fs := fetches(evs)
	if len(fs) != 1 {
		r.Fatalf("After one doorbell the device fetched %d descriptors, want 1.", len(fs))
	}
	if fs[0].slot != slot {
		r.Fatalf("The device fetched slot %d, want %d.", fs[0].slot, slot)
	}
	// The trace shows the fields the device decoded; the addresses are checked
	// by what the copy did.
	want := sacc.Descriptor{ReqID: d.ReqID, Opcode: d.Opcode, Length: d.Length, Flags: d.Flags}
	if got := fs[0].d; got != want {
		why := "Is the descriptor in slot " + fmt.Sprint(slot) + ", at SQ + 32*slot, laid out as §6.1 says (sacc.Descriptor.Encode)?"
		if got.ReqID == 0 && got.Opcode == sacc.OpNOP && got.Length == 0 {
			why = "That is an empty slot: the descriptor was not in memory when the device read it. " + why
		}
		if arch != "" {
			why = "On this " + arch + " CPU the doorbell overtook the descriptor stores: they were still in the store buffer " +
				"when the device read the slot. Put c.WMB() between the stores and the doorbell (regs.Writel also orders " +
				"them; regs.WritelRelaxed does not)."
		}
		r.Fatalf("The device fetched slot %d and found %s,\nwant %s.\n%s", slot, describe(got), describe(d), why)
	}
}

func TestSubmitOneDescriptor(t *testing.T) {
	r := setUp(t, host.Config{})
	d := sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 0x2A}
	evs, err := r.submit(d)
	r.checkSubmitted(evs, err, d, 0, "")
	if posts := check.Find(evs, trace.CQPost); len(posts) != 1 || posts[0].Args[1] != uint64(d.ReqID) {
		r.Fatalf("The device fetched the descriptor but posted %d completions, want one for req_id %#x.", len(posts), d.ReqID)
	}
}

func TestSubmitWritesEveryField(t *testing.T) {
	r := setUp(t, host.Config{})
	r.advance(3)
	payload := []byte("every field of the descriptor matters: src, dst, length, opcode, flags, req_id.")
	srcCPU, srcDMA, err := r.pdev.DMAAllocCoherent(sacc.PageSize)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	dstCPU, dstDMA, err := r.pdev.DMAAllocCoherent(sacc.PageSize)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	r.CPU.StoreBytes(srcCPU, payload)
	r.CPU.WMB()
	d := sacc.Descriptor{Src: srcDMA, Dst: dstDMA, Length: uint32(len(payload)), Opcode: sacc.OpMEMCPY,
		Flags: sacc.FlagInterrupt, ReqID: 0x1234}
	evs, err := r.submit(d)
	r.checkSubmitted(evs, err, d, 3, "")
	got := make([]byte, len(payload))
	r.CPU.LoadBytes(dstCPU, got)
	if !bytes.Equal(got, payload) {
		r.Fatalf("The device found the right req_id, opcode, length and flags, but the copy went wrong: the destination "+
			"holds %q,\nwant %q.\nCheck src_addr (bytes 0-7) and dst_addr (bytes 8-15) of the descriptor.", got, payload)
	}
}

func TestSubmitWrapsTheTail(t *testing.T) {
	r := setUp(t, host.Config{})
	r.advance(ringSize - 1)
	for i, slot := range []uint32{ringSize - 1, 0} {
		d := sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 0x77 + uint32(i)}
		evs, err := r.submit(d)
		r.checkSubmitted(evs, err, d, slot, "")
	}
}

func TestSubmitOrdersTheDoorbell(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("arm64 seed %d", seed), func(t *testing.T) {
			r := setUp(t, host.Config{Machine: machine.Config{Seed: seed}, CPU: cpu.Config{Arch: cpu.ARM64}})
			// Two laps round the ring: every slot is written twice, so a descriptor
			// read too early shows up either as an empty slot or as the previous
			// lap's job.
			for i := range 2 * ringSize {
				d := sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 0x300 + uint32(i)}
				slot := r.q.Tail
				evs, err := r.submit(d)
				r.checkSubmitted(evs, err, d, slot, "arm64 (weakly ordered)")
			}
		})
	}
}

func TestSubmitRefusesABadQueue(t *testing.T) {
	for _, q := range []Queue{{Size: ringSize, Tail: ringSize}, {Size: ringSize, Tail: 1000}, {Size: 0}} {
		t.Run(fmt.Sprintf("size %d tail %d", q.Size, q.Tail), func(t *testing.T) {
			r := setUp(t, host.Config{})
			q.SQ = r.q.SQ
			r.q = q
			evs, err := r.submit(sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 0x55})
			var touched []string
			for _, ev := range check.Find(evs, trace.CPUWrite, trace.RegWrite, trace.GuestError) {
				if ev.Kind == trace.RegWrite && ev.Args[0] == sacc.RegCQHeadDB {
					continue // the test's own, after Submit
				}
				touched = append(touched, ev.String())
			}
			if err == nil {
				r.Fatalf("Submit was given a queue with tail %d in a ring of %d slots and returned nil. "+
					"There is no such slot: return an error.", q.Tail, q.Size)
			}
			if len(touched) > 0 {
				r.Fatalf("Submit returned an error for tail %d in a ring of %d slots, good, but it touched the ring or the device first:\n  %s\n"+
					"Check the queue before the first store.", q.Tail, q.Size, strings.Join(touched, "\n  "))
			}
		})
	}
}
