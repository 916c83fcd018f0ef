package msix

import (
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 1_000_000

// data is the message the tests ask for: vector 0x40 at the interrupt controller.
const data = 0x40

// setUp brings the device up, maps BAR1 and turns MSI-X on (every vector still
// masked, as at power-on).
func setUp(t *testing.T) (*ringrig.Rig, *kernel.IOMem) {
	r := ringrig.Up(t, host.Config{}, 8)
	table, err := r.PDev.IOMap(sacc.MSIXTableBAR)
	if err != nil {
		t.Fatalf("check: map BAR1: %v", err)
	}
	cap := r.PDev.FindCapability(sacc.CapIDMSIX)
	r.PDev.WriteConfig16(cap+sacc.CapMSIXControlOff, r.PDev.ReadConfig16(cap+sacc.CapMSIXControlOff)|sacc.MSIXCtrlEnable)
	return r, table
}

func setup(r *ringrig.Rig, table *kernel.IOMem, v int) error {
	var err error
	r.Do("SetupVector", budget, func() { err = SetupVector(table, v, sacc.IntWindowBase, data) })
	return err
}

// job runs a NOP that asks for an interrupt and returns its events.
func job(r *ringrig.Rig) []trace.Event {
	mark := r.Mark()
	r.Submit(sacc.Descriptor{Opcode: sacc.OpNOP, Flags: sacc.FlagInterrupt})
	r.CPU.Delay(5_000)
	return r.Since(mark)
}

func TestInterruptArrives(t *testing.T) {
	r, table := setUp(t)
	if err := setup(r, table, 0); err != nil {
		r.Fatalf("SetupVector(0, %#x, %#x) returned an error: %v", uint64(sacc.IntWindowBase), data, err)
	}
	evs := job(r)
	st := r.State()
	if len(check.Find(evs, trace.MSIXPending)) > 0 {
		r.Fatalf("The device set PBA bit 0 instead of sending: entry 0 is still masked (vector control %#x). Unmask it last.", st.MSIX[0].Control)
	}
	sent := check.Find(evs, trace.MSIXSend)
	if len(sent) == 0 {
		r.Fatalf("The job asked for an interrupt, but the device sent no message:\n%s", check.Lines(evs))
	}
	if sent[0].Args[1] != sacc.IntWindowBase || sent[0].Args[2] != data {
		r.Fatalf("The device sent vector 0, but the message went to %#x with data %#x; want %#x and %#x. Entry 0 holds %+v.",
			sent[0].Args[1], sent[0].Args[2], uint64(sacc.IntWindowBase), data, st.MSIX[0])
	}
	if len(check.Find(evs, trace.MSIDeliver)) == 0 {
		r.Fatalf("The message was sent but never delivered as an interrupt:\n%s", check.Lines(evs))
	}
	if !st.MSIX[1].Masked() {
		r.Fatalf("SetupVector(0, ...) changed entry 1 too: it is no longer masked (%+v). Only entry v may change.", st.MSIX[1])
	}
}

// TestUnmaskLast: a message is already pending when SetupVector runs; it must
// leave with the new address and data.
func TestUnmaskLast(t *testing.T) {
	r, table := setUp(t)
	job(r) // masked at power-on: PBA bit 0 set
	if r.State().PBA&1 == 0 {
		t.Fatal("check: no pending bit")
	}
	mark := r.Mark()
	if err := setup(r, table, 0); err != nil {
		r.Fatalf("SetupVector returned an error: %v", err)
	}
	r.CPU.Delay(1_000)
	sent := check.Find(r.Since(mark), trace.MSIXSend)
	switch {
	case len(sent) == 0:
		r.Fatalf("Vector 0 had an interrupt pending in the PBA, but after SetupVector no message went out: the entry is still masked.")
	case sent[0].Args[1] != sacc.IntWindowBase || sent[0].Args[2] != data:
		r.Fatalf("A pending interrupt left with address %#x and data %#x: you unmasked it before its address and data were written. Unmask last.",
			sent[0].Args[1], sent[0].Args[2])
	}
}

func TestPending(t *testing.T) {
	r, table := setUp(t)
	job(r) // vector 0 masked: its PBA bit is set
	var p0, p1 bool
	r.Do("Pending", budget, func() { p0, p1 = Pending(table, 0), Pending(table, 1) })
	if !p0 || p1 {
		r.Fatalf("With vector 0 masked and a completion interrupt waiting, the PBA reads %#x; Pending(0) = %v and Pending(1) = %v, want true and false.",
			r.State().PBA, p0, p1)
	}
	// Acknowledging clears the condition, and with it the pending bit.
	r.Regs.Writel(sacc.RegIRQAck, sacc.IRQCompletion)
	r.Do("Pending", budget, func() { p0 = Pending(table, 0) })
	if p0 {
		r.Fatalf("After IRQ_ACK the PBA reads %#x, yet Pending(0) = true.", r.State().PBA)
	}
}

func TestRejectsABadVector(t *testing.T) {
	r, table := setUp(t)
	mark := r.Mark()
	if err := setup(r, table, sacc.MSIXVectors); err == nil {
		r.Fatalf("SetupVector(%d, ...) returned no error; the table has %d entries, 0 to %d.", sacc.MSIXVectors, sacc.MSIXVectors, sacc.MSIXVectors-1)
	}
	if w := check.Find(r.Since(mark), trace.CPUWrite); len(w) > 0 {
		r.Fatalf("SetupVector(%d, ...) returned an error, but first it wrote:\n%s", sacc.MSIXVectors, check.Lines(w))
	}
}

// TestVectorOne programs the error vector and halts the device: the message
// must go to vector 1's address, and vector 0 must stay as it was.
func TestVectorOne(t *testing.T) {
	r, table := setUp(t)
	const data1 = 0x41
	addr := uint64(sacc.IntWindowBase + 0x1000)
	var err error
	r.Do("SetupVector", budget, func() { err = SetupVector(table, 1, addr, data1) })
	if err != nil {
		r.Fatalf("SetupVector(1, %#x, %#x) returned an error: %v", addr, data1, err)
	}
	st := r.State()
	if !st.MSIX[0].Masked() || st.MSIX[0].Addr != 0 || st.MSIX[0].Data != 0 {
		r.Fatalf("SetupVector(1, ...) changed entry 0 (%+v): entry v is the 16 bytes at 16*v, and only entry v may change.", st.MSIX[0])
	}
	mark := r.Mark()
	r.Regs.Writel(sacc.RegSQTail, 200) // out of range: a device error, and vector 1
	r.CPU.Delay(2_000)
	sent := check.Find(r.Since(mark), trace.MSIXSend)
	switch {
	case len(sent) == 0:
		r.Fatalf("The device halted and signalled vector 1, but no message went out: entry 1 holds %+v. Is it unmasked?", r.State().MSIX[1])
	case sent[0].Args[0] != 1 || sent[0].Args[1] != addr || sent[0].Args[2] != data1:
		r.Fatalf("The device sent vector %d; want vector 1, but the message went to %#x with data %#x; want %#x and %#x. Entry 1 holds %+v.",
			sent[0].Args[0], sent[0].Args[1], sent[0].Args[2], addr, data1, r.State().MSIX[1])
	}
}

// TestAddressAbove4GiB: the message address is 64 bits wide.
func TestAddressAbove4GiB(t *testing.T) {
	r, table := setUp(t)
	const addr = 0x0000_0012_3456_7000
	var err error
	r.Do("SetupVector", budget, func() { err = SetupVector(table, 0, addr, data) })
	if err != nil {
		r.Fatalf("SetupVector(0, %#x, %#x) returned an error: %v", uint64(addr), data, err)
	}
	if e := r.State().MSIX[0]; e.Addr != addr || e.Data != data {
		r.Fatalf("After SetupVector(0, %#x, %#x), entry 0 holds address %#x and data %#x: the message address is 64 bits, "+
			"its low half at +0 and its high half at +4.", uint64(addr), data, e.Addr, e.Data)
	}
}

// TestPendingVectorOne: the error vector is masked and has fired.
func TestPendingVectorOne(t *testing.T) {
	r, table := setUp(t)
	r.Regs.Writel(sacc.RegSQTail, 200) // vector 1, masked: PBA bit 1
	r.CPU.Delay(2_000)
	if r.State().PBA != 2 {
		t.Fatalf("check: PBA %#x", r.State().PBA)
	}
	var p0, p1, p2 bool
	r.Do("Pending", budget, func() { p0, p1, p2 = Pending(table, 0), Pending(table, 1), Pending(table, 2) })
	if p0 || !p1 || p2 {
		r.Fatalf("With only vector 1 pending, the PBA reads %#x; Pending(0) = %v, Pending(1) = %v and Pending(2) = %v, "+
			"want false, true and false: bit v of the PBA is vector v, and there is no vector 2.", r.State().PBA, p0, p1, p2)
	}
}
