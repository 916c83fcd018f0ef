package recovery

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 20_000_000 // 20 ms: far past ReadyTimeout

// halted is a rig whose device ran six NOPs, has two copies in flight, and
// was then halted by SQ_TAIL = 200. q is the driver's state at that moment.
func halted(t *testing.T, cfg host.Config) (*ringrig.Rig, *Queue) {
	const size = 8
	r := ringrig.Up(t, cfg, size)
	rd := ringrig.NewReader()
	for range 6 {
		r.Submit(sacc.Descriptor{Opcode: sacc.OpNOP})
	}
	if !r.Until(50_000, 500, func() bool { return r.State().CQTail == 6 }) {
		t.Fatal("check: six NOPs did not complete")
	}
	for range 6 {
		rd.Next(r)
	}
	r.Regs.Writel(sacc.RegCQHead, rd.Head)
	big, err := r.K.AllocPages(256 << 10)
	if err != nil {
		t.Fatal(err)
	}
	q := &Queue{SQ: r.SQ, CQ: r.CQ, CQMem: r.CQ, Size: size, Head: 6, Phase: 1}
	for range 2 {
		id := r.Submit(sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: big, Dst: big + 128<<10, Length: 128 << 10})
		q.InFlight = append(q.InFlight, &Request{ReqID: id})
	}
	q.Tail = r.Tail
	r.Regs.Writel(sacc.RegSQTail, 200)
	r.CPU.Delay(1000)
	if r.State().Status&sacc.StatusError == 0 || r.State().ErrCode != uint32(sacc.StatusDoorbell) {
		t.Fatalf("check: the device did not halt: %+v", r.State())
	}
	return r, q
}

func recoverDevice(r *ringrig.Rig, q *Queue) ([]trace.Event, error) {
	var err error
	mark := r.Mark()
	r.Do("Recover", budget, func() { err = Recover(r.CPU, r.Regs, q) })
	return r.Since(mark), err
}

// TestRecoverAfterABadDoorbell: the whole recovery, then a job on the fresh rings.
func TestRecoverAfterABadDoorbell(t *testing.T) {
	r, q := halted(t, host.Config{})
	inflight := append([]*Request(nil), q.InFlight...)
	evs, err := recoverDevice(r, q)
	st := r.State()
	if len(check.Find(evs, trace.Reset)) == 0 {
		r.Fatalf("Recover returned %v, but the device never saw CTRL.RESET (bit 1 of CTRL, 0x08). A halted device stays "+
			"halted until RESET: STATUS now reads %#x.", err, st.Status)
	}
	if err != nil {
		r.Fatalf("Recover returned an error: %v\nAfter it STATUS reads %#x and ERR_CODE %d.%s", err, st.Status, st.ErrCode, refused(evs))
	}
	if st.Status&sacc.StatusReady == 0 || st.Status&sacc.StatusError != 0 {
		r.Fatalf("Recover returned nil, but STATUS reads %#x: the device is not READY.%s", st.Status, refused(evs))
	}
	if st.SQBase != q.SQ || st.CQBase != q.CQ || st.SQSize != q.Size || st.CQSize != q.Size {
		r.Fatalf("After Recover the ring registers hold SQ_BASE %#x SQ_SIZE %d CQ_BASE %#x CQ_SIZE %d; want %#x %d %#x %d. "+
			"RESET cleared them: program them again before ENABLE.", st.SQBase, st.SQSize, st.CQBase, st.CQSize, q.SQ, q.Size, q.CQ, q.Size)
	}
	for i := range q.Size {
		if c := r.Entry(i); c != (sacc.Completion{}) {
			r.Fatalf("After Recover, CQ slot %d still holds %+v from before the reset. The device starts again at slot 0 with "+
				"phase 1; an old entry with phase 1 would look new to the driver. Zero the whole CQ (Size × 16 bytes at CQMem).", i, c)
		}
	}
	if q.Tail != 0 || q.Head != 0 || q.Phase != 1 {
		r.Fatalf("After Recover the driver's indices are Tail %d, Head %d, Phase %d; the device starts again at 0, 0 and 1, "+
			"and so must the driver.", q.Tail, q.Head, q.Phase)
	}
	if len(q.InFlight) != 0 {
		r.Fatalf("After Recover %d requests are still in q.InFlight: their completions will never come. Fail them and empty the list.", len(q.InFlight))
	}
	for _, req := range inflight {
		switch {
		case req.Err == nil:
			r.Fatalf("Request req_id %d was in flight when the device halted, and after Recover its Err is nil: its caller would "+
				"wait for ever. Give it an error that wraps ErrDeviceHalted.", req.ReqID)
		case !errors.Is(req.Err, ErrDeviceHalted):
			r.Fatalf("Request req_id %d failed with %q, which does not wrap ErrDeviceHalted (use fmt.Errorf with %%w).", req.ReqID, req.Err)
		case !strings.Contains(req.Err.Error(), fmt.Sprint(uint32(sacc.StatusDoorbell))):
			r.Fatalf("Request req_id %d failed with %q, but the device said why it halted: ERR_CODE was %d (doorbell out of range). "+
				"Read ERR_CODE before the RESET, which clears it, and put it in the error.", req.ReqID, req.Err, sacc.StatusDoorbell)
		}
	}
	// The rings work again, from slot 0.
	r.Tail = 0
	rd := ringrig.NewReader()
	id := r.Submit(sacc.Descriptor{Opcode: sacc.OpNOP})
	var c sacc.Completion
	if !r.Until(50_000, 500, func() (ok bool) { c, ok = rd.Next(r); return ok }) || c.ReqID != id {
		r.Fatalf("After Recover a NOP in SQ slot 0 did not complete in CQ slot 0 with phase 1 (slot 0 holds %+v).", r.Entry(0))
	}
}

// refused explains a refused ENABLE, if there was one.
func refused(evs []trace.Event) string {
	if e := check.Find(evs, trace.EnableRefused); len(e) > 0 {
		return fmt.Sprintf("\nThe device refused ENABLE:\n%sRESET sets the ring registers to 0, and ENABLE is refused (ERR_CODE 6) "+
			"unless they hold a valid configuration: program them again first.", check.Lines(e))
	}
	return ""
}

// TestGivesUp: a device that never becomes READY again.
func TestGivesUp(t *testing.T) {
	cfg := host.Config{}
	r, q := halted(t, cfg)
	r.M.Cost().EnableLatency = 10_000_000 // the device now takes 10 ms to come back
	evs, err := recoverDevice(r, q)
	enabled := check.Find(evs, trace.Enable)
	if len(enabled) == 0 {
		r.Fatalf("Recover never set CTRL.ENABLE (returned %v).%s", err, refused(evs))
	}
	waited := r.M.Now() - enabled[0].Time
	if err == nil {
		r.Fatalf("This device takes 10 ms to become READY after the reset, far past ReadyTimeout (%s). Recover returned nil "+
			"after %s: it should have given up with an error.", check.Duration(ReadyTimeout), check.Duration(waited))
	}
	if waited > 2*ReadyTimeout {
		r.Fatalf("Recover gave up, but not before %s after ENABLE; ReadyTimeout is %s: measure the deadline in time, with c.Now().", check.Duration(waited), check.Duration(ReadyTimeout))
	}
}
