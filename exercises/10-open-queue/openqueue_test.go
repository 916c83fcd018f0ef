package openqueue

import (
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/bypassrig"
	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 1_000_000 // 1 ms: the slow path takes tens of µs

func open(r *bypassrig.Rig, size uint32) (Queue, []trace.Event, error) {
	var q Queue
	var err error
	mark := r.Mark()
	r.Do("Open", budget, func() { q, err = Open(r.P, size) })
	return q, r.Since(mark), err
}

// use submits one NOP through q the way the fast path will, and waits for its
// completion in q's CQ.
func use(r *bypassrig.Rig, q Queue) {
	var d [sacc.DescriptorSize]byte
	sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 7}.Encode(d[:])
	if err := bypassrig.Safely(func() { r.P.StoreBytes(q.SQ, d[:]) }); err != nil {
		r.Fatalf("Open returned SQ = %#x, but the process cannot write there: %v. SQ must be memory of the process, from p.Alloc.", q.SQ, err)
	}
	r.CPU.WMB()
	if err := bypassrig.Safely(func() { r.P.Store32(q.Doorbell, 1) }); err != nil {
		r.Fatalf("Open returned Doorbell = %#x, but the process cannot write there: %v. Doorbell must be the address p.Mmap returned.", q.Doorbell, err)
	}
	var c sacc.Completion
	var cerr error
	ok := false
	for range 100 {
		if c, cerr = r.Completion(q.CQ, 0); cerr != nil {
			r.Fatalf("Open returned CQ = %#x: %v.", q.CQ, cerr)
		}
		if c.Phase == 1 {
			ok = true
			break
		}
		r.CPU.Delay(1000)
	}
	doorbells := 0
	for _, ev := range check.Find(r.Events(), trace.Doorbell) {
		if ev.Args[0] == 1 {
			doorbells++
		}
	}
	switch {
	case doorbells == 0:
		r.Fatalf("The test wrote 1 at Doorbell (%#x) + 0, but the device saw no SQ_TAIL write: that address is not the "+
			"doorbell page. Map driver.MmapDoorbell (offset 0x1000), one page.", q.Doorbell)
	case !ok:
		r.Fatalf("The test put a NOP in slot 0 of your SQ (%#x) and rang the doorbell; after 100 µs slot 0 of your CQ (%#x) "+
			"holds %+v, not a new completion. Did SETUP_RINGS get the right addresses and size?", q.SQ, q.CQ, c)
	case c.ReqID != 7:
		r.Fatalf("The test put a NOP with req_id 7 in slot 0 of your SQ (%#x), but the device completed req_id %d: it read "+
			"another ring. The RingArgs block is SQ address, CQ address, size, padding.", q.SQ, c.ReqID)
	}
}

// TestOpenAndUse opens a 16-entry queue and rings it as the fast path will.
func TestOpenAndUse(t *testing.T) {
	r := bypassrig.Up(t, cpu.X86, 1)
	q, evs, err := open(r, 16)
	if err != nil {
		r.Fatalf("Open(p, 16) returned an error: %v\nThe system calls it made:\n%s", err, check.Lines(check.Find(evs, trace.Syscall)))
	}
	if q.Size != 16 {
		r.Fatalf("Open(p, 16) returned a Queue with Size %d.", q.Size)
	}
	if st := r.M.Device().State(); st.SQSize != 16 || st.CQSize != 16 {
		r.Fatalf("After Open(p, 16) the device has SQ_SIZE %d and CQ_SIZE %d: the driver was not given your rings of 16 entries.",
			st.SQSize, st.CQSize)
	}
	use(r, q)
	if n := len(check.Find(evs, trace.Syscall)); n > 8 {
		r.Errorf("Open made %d system calls; open, one mmap, three allocations and one ioctl are 6.", n)
	}
}

// TestOnlyTheDoorbellPage runs on a machine whose driver wrongly lets the
// register page be mapped too, and checks that Open did not take it.
func TestOnlyTheDoorbellPage(t *testing.T) {
	r := bypassrig.Up(t, cpu.X86, 1, quirk.MapRegisterPage)
	q, _, err := open(r, 8)
	if err != nil {
		r.Fatalf("Open(p, 8) returned an error: %v", err)
	}
	var magic uint32
	if bypassrig.Safely(func() { magic = r.P.Load32(q.Doorbell - sacc.PageSize) }) == nil && magic == sacc.MagicValue {
		r.Fatalf("The page just below your doorbell page, at %#x, reads MAGIC (%#x): the process has the register page mapped "+
			"too, with CTRL and the ring bases in reach. Map from offset driver.MmapDoorbell (0x1000), one page only. "+
			"(This machine's driver does not refuse the register page: a real one would.)", q.Doorbell-sacc.PageSize, magic)
	}
	use(r, q)
}

// TestGivesUpCleanly: a size the driver refuses is an error, and the file is
// closed before Open returns.
func TestGivesUpCleanly(t *testing.T) {
	r := bypassrig.Up(t, cpu.X86, 1)
	_, evs, err := open(r, 6)
	calls := check.Find(evs, trace.Syscall)
	if err == nil {
		r.Fatalf("Open(p, 6) returned nil: 6 is not a power of two and the driver refuses such rings (SETUP_RINGS fails with EINVAL). "+
			"Return the error the ioctl gave you.\nThe system calls Open made:\n%s", check.Lines(calls))
	}
	closed := false
	for _, ev := range calls {
		if ev.Args[0] == trace.SysClose {
			closed = true
		}
	}
	if !closed {
		r.Fatalf("Open(p, 6) returned an error (%v) but never closed the device file: close it before you give up.\n"+
			"The system calls Open made:\n%s", err, check.Lines(calls))
	}
}
