package driver_test

import (
	"bytes"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/trace"
)

// withQuirk returns cfg with q switched on, the way a bug hunt switches it on:
// in the machine's quirk set, which host.BootOn hands to the kernel and through it
// to the driver.
func withQuirk(cfg host.Config, q quirk.Quirk, on bool) host.Config {
	if on {
		cfg.Machine.Quirks = cfg.Machine.Quirks.With(q)
	}
	return cfg
}

// quirkName labels a run: the quirk's name, or "as specified".
func quirkName(q quirk.Quirk, on bool) string {
	if on {
		return q.String()
	}
	return "as specified"
}

// events records every event of the given kinds from now on.
type events struct{ evs []trace.Event }

func record(h *host.Host, kinds ...trace.Kind) *events {
	e := &events{}
	h.M.Tracer().Attach(trace.Func(func(ev trace.Event) {
		for _, k := range kinds {
			if ev.Kind == k {
				e.evs = append(e.evs, ev)
			}
		}
	}))
	return e
}

// count is how many recorded events are of kind k.
func (e *events) count(k trace.Kind) int {
	n := 0
	for _, ev := range e.evs {
		if ev.Kind == k {
			n++
		}
	}
	return n
}

// first is the first recorded event of kind k.
func (e *events) first(k trace.Kind) (trace.Event, bool) {
	for _, ev := range e.evs {
		if ev.Kind == k {
			return ev, true
		}
	}
	return trace.Event{}, false
}

// faultLog reads the IOMMU fault log the way software does: the registers say
// where the records are and which are new, the records are in RAM.
func faultLog(h *host.Host) []sacc.FaultRecord {
	st := h.M.IOMMU().State()
	var out []sacc.FaultRecord
	if st.FaultSize == 0 {
		return nil
	}
	for i := st.FaultHead % st.FaultSize; i != st.FaultTail; i = (i + 1) % st.FaultSize {
		var b [sacc.FaultRecordSize]byte
		h.M.RAM().Read(st.FaultBase+uint64(i)*sacc.FaultRecordSize, b[:])
		out = append(out, sacc.DecodeFaultRecord(b[:]))
	}
	return out
}

// userCopy is a process with two user buffers of n bytes and the driver's
// character device open, for the kernel path (ioctl IocSubmit).
type userCopy struct {
	h             *host.Host
	p             *kernel.Process
	fd            int
	src, dst, arg uint64
	n             uint32
}

func newUserCopy(t *testing.T, h *host.Host, n uint32) *userCopy {
	t.Helper()
	p := h.K.NewProcess("app")
	fd, err := p.Open(driver.DevPath)
	if err != nil {
		t.Fatal(err)
	}
	u := &userCopy{h: h, p: p, fd: fd, n: n}
	if u.src, err = p.Alloc(uint64(n)); err != nil {
		t.Fatal(err)
	}
	if u.dst, err = p.Alloc(uint64(n)); err != nil {
		t.Fatal(err)
	}
	if u.arg, err = p.Alloc(sacc.PageSize); err != nil {
		t.Fatal(err)
	}
	return u
}

// run copies fill bytes from src to dst with one ioctl and returns the status the
// kernel wrote back and the ioctl's error.
func (u *userCopy) run(fill byte) (sacc.Status, error) {
	u.p.StoreBytes(u.src, bytes.Repeat([]byte{fill}, int(u.n)))
	a := driver.SubmitArgs{Opcode: sacc.OpMEMCPY, Length: u.n, Src: u.src, Dst: u.dst}
	a.Store(u.p, u.arg)
	_, err := u.p.Ioctl(u.fd, driver.IocSubmit, u.arg)
	a.LoadResult(u.p, u.arg)
	return a.Status, err
}

// arrived reports whether dst holds fill throughout.
func (u *userCopy) arrived(fill byte) bool {
	got := make([]byte, u.n)
	u.p.LoadBytes(u.dst, got)
	return bytes.Equal(got, bytes.Repeat([]byte{fill}, int(u.n)))
}

// dstPhys is the physical address behind dst (its first page).
func (u *userCopy) dstPhys(t *testing.T) uint64 {
	t.Helper()
	sg, err := u.p.PinUserPages(u.dst, 1)
	if err != nil {
		t.Fatal(err)
	}
	u.p.UnpinUserPages(sg)
	return sg[0].Phys
}
