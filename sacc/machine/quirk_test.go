package machine_test

import (
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/baremetal"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Each quirk test runs the same scenario on a machine as specified and on one with
// the quirk, and checks that the quirk — and only the quirk — shows the symptom the
// bug hunts rely on.

func quirkHost(t *testing.T, q quirk.Set, sq, cq uint32) *baremetal.Host {
	t.Helper()
	m, err := machine.New(machine.Config{Quirks: q})
	if err != nil {
		t.Fatal(err)
	}
	h, err := baremetal.Enumerate(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(baremetal.SQAddr, sq, baremetal.CQAddrFor(sq), cq); err != nil {
		t.Fatal(err)
	}
	return h
}

// firstSight steps the machine until the CQ slot shows the expected phase and
// returns the entry as a poller would first see it.
func firstSight(t *testing.T, h *baremetal.Host, slot uint32, phase uint8) sacc.Completion {
	t.Helper()
	var b [sacc.CompletionSize]byte
	for {
		h.M.ReadBytes(h.CQ+uint64(slot)*sacc.CompletionSize, b[:])
		if c := sacc.DecodeCompletion(b[:]); c.Phase == phase {
			return c
		}
		if !h.M.Step() {
			t.Fatal("no completion")
		}
	}
}

func TestQuirkPhaseFirst(t *testing.T) {
	for _, tc := range []struct {
		q         quirk.Set
		wantReqID uint32
	}{{0, 0x77}, {quirk.Set(0).With(quirk.PhaseFirst), 0}} {
		h := quirkHost(t, tc.q, 4, 4)
		h.Put(sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 0x77})
		h.Ring()
		if c := firstSight(t, h, 0, 1); c.ReqID != tc.wantReqID {
			t.Errorf("quirks %q: new phase seen with req_id %#x, want %#x", tc.q, c.ReqID, tc.wantReqID)
		}
		for h.M.Step() {
		}
		if c, _ := h.Poll(); c.ReqID != 0x77 {
			t.Errorf("quirks %q: the body never landed: %+v", tc.q, c)
		}
	}
}

func TestQuirkMSIBeforeCompletion(t *testing.T) {
	for _, tc := range []struct {
		q             quirk.Set
		entryAtMSI    bool
		wantDelivered uint64
	}{{0, true, 1}, {quirk.Set(0).With(quirk.MSIBeforeCompletion), false, 1}} {
		h := quirkHost(t, tc.q, 4, 4)
		h.EnableMSIX(0, sacc.IntWindowBase, 0x50)
		seen := false
		h.M.Tracer().Attach(trace.Func(func(ev trace.Event) {
			if ev.Kind == trace.MSIDeliver {
				seen = h.M.RAM().Load(h.CQ+sacc.CplPhaseOff, 2) == 1
			}
		}))
		h.Put(sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 1, Flags: sacc.FlagInterrupt})
		h.Ring()
		for h.M.Step() {
		}
		if seen != tc.entryAtMSI {
			t.Errorf("quirks %q: completion visible when the MSI arrived = %v, want %v", tc.q, seen, tc.entryAtMSI)
		}
		if n := h.M.Interrupts().Count(0x50); n != tc.wantDelivered {
			t.Errorf("quirks %q: %d interrupts", tc.q, n)
		}
	}
}

func TestQuirkIOTLBIgnoresInvalidate(t *testing.T) {
	for _, tc := range []struct {
		q        quirk.Set
		wantNew  bool // the copy after invalidation reaches the new page
		wantName string
	}{{0, true, "as specified"}, {quirk.Set(0).With(quirk.IOTLBIgnoresInvalidate), false, "quirk"}} {
		h := quirkHost(t, tc.q, 4, 4)
		m := h.M
		pt, err := baremetal.NewPageTables(m, 0x0080_0000, 16*sacc.PageSize)
		if err != nil {
			t.Fatal(err)
		}
		src, dst, other := uint64(baremetal.DataAddr), uint64(baremetal.DataAddr+0x1000), uint64(baremetal.DataAddr+0x2000)
		for _, p := range []uint64{baremetal.SQAddr, baremetal.CQAddr, src, dst} {
			if err := pt.Map(p, p, sacc.PTERead|sacc.PTEWrite); err != nil {
				t.Fatal(err)
			}
		}
		baremetal.IOMMU{M: m}.Enable(pt.Root, 0x0090_0000, 16)
		m.Fill(src, 8, 0xAB)
		copyOnce := func(id uint32) {
			h.Put(sacc.Descriptor{Src: src, Dst: dst, Length: 8, Opcode: sacc.OpMEMCPY, ReqID: id})
			h.Ring()
			if c, err := h.Wait(100_000); err != nil || c.Status != sacc.StatusOK {
				t.Fatalf("%s: copy %d: %+v %v", tc.wantName, id, c, err)
			}
		}
		copyOnce(1) // fills the IOTLB
		if err := pt.Map(dst, other, sacc.PTERead|sacc.PTEWrite); err != nil {
			t.Fatal(err)
		}
		baremetal.IOMMU{M: m}.Invalidate(dst)
		copyOnce(2)
		if got := m.Read(other, 8) == 0xABABABABABABABAB; got != tc.wantNew {
			t.Errorf("%s: copy after invalidation reached the new page = %v, want %v", tc.wantName, got, tc.wantNew)
		}
	}
}

func TestQuirkNoCQFullCheck(t *testing.T) {
	for _, tc := range []struct {
		q         quirk.Set
		wantStall bool
		wantSlot0 uint32 // req_id in CQ slot 0 after five jobs with no CQ_HEAD write
	}{{0, true, 0}, {quirk.Set(0).With(quirk.NoCQFullCheck), false, 4}} {
		h := quirkHost(t, tc.q, 8, 4)
		stalled := false
		h.M.Tracer().Attach(trace.Func(func(ev trace.Event) { stalled = stalled || ev.Kind == trace.CQFull }))
		for i := range uint32(5) {
			h.Put(sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: i})
		}
		h.Ring()
		for h.M.Step() {
		}
		if stalled != tc.wantStall {
			t.Errorf("quirks %q: stalled = %v", tc.q, stalled)
		}
		if got := uint32(h.M.Read(h.CQ, 4)); got != tc.wantSlot0 {
			t.Errorf("quirks %q: CQ slot 0 holds req_id %d, want %d", tc.q, got, tc.wantSlot0)
		}
	}
}

func TestQuirkWriteBeforeCheck(t *testing.T) {
	for _, tc := range []struct {
		q           quirk.Set
		wantPartial bool
	}{{0, false}, {quirk.Set(0).With(quirk.WriteBeforeCheck), true}} {
		h := quirkHost(t, tc.q, 4, 4)
		// The destination runs off the end of RAM: its first page is fine, the next
		// is not memory, so the command fails with status 2.
		end := h.M.RAM().Size()
		src, dst := uint64(baremetal.DataAddr), end-sacc.PageSize
		h.M.Fill(src, 2*sacc.PageSize, 0xCD)
		h.Put(sacc.Descriptor{Src: src, Dst: dst, Length: 2 * sacc.PageSize, Opcode: sacc.OpMEMCPY, ReqID: 9})
		h.Ring()
		c, err := h.Wait(100_000)
		if err != nil || c.Status != sacc.StatusBadAddress {
			t.Fatalf("quirks %q: %+v %v", tc.q, c, err)
		}
		if partial := h.M.Read(dst, 1) == 0xCD; partial != tc.wantPartial {
			t.Errorf("quirks %q: partial write = %v, want %v", tc.q, partial, tc.wantPartial)
		}
	}
}

func TestQuirkIgnoreBusMaster(t *testing.T) {
	for _, tc := range []struct {
		q       quirk.Set
		wantErr bool
	}{{0, true}, {quirk.Set(0).With(quirk.IgnoreBusMaster), false}} {
		h := quirkHost(t, tc.q, 4, 4)
		h.M.Write(sacc.ECAMAddress(0, sacc.SACCDevice, 0, sacc.CfgCommand), 2, sacc.CmdMemorySpace)
		h.Put(sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 3})
		h.Ring()
		for h.M.Step() {
		}
		st := h.Reg(sacc.RegSTATUS)
		if gotErr := st&sacc.StatusError != 0; gotErr != tc.wantErr {
			t.Errorf("quirks %q: STATUS %#x ERR_CODE %#x", tc.q, st, h.Reg(sacc.RegErrCode))
		}
		if tc.wantErr && h.Reg(sacc.RegErrCode) != uint32(sacc.StatusBadAddress) {
			t.Errorf("no bus mastering must be device error 2, got %#x", h.Reg(sacc.RegErrCode))
		}
	}
}

// TestEveryQuirkIsTested keeps this file in step with the quirk list.
func TestEveryQuirkIsTested(t *testing.T) {
	tested := map[quirk.Quirk]bool{quirk.PhaseFirst: true, quirk.MSIBeforeCompletion: true,
		quirk.IOTLBIgnoresInvalidate: true, quirk.NoCQFullCheck: true, quirk.WriteBeforeCheck: true, quirk.IgnoreBusMaster: true}
	for _, q := range quirk.All() {
		if (q.Side == quirk.SideDevice || q.Side == quirk.SidePlatform) && !tested[q.Quirk] {
			t.Errorf("quirk %s has no test here", q.Name)
		}
	}
}
