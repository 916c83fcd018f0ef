package baremetal

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
)

// Workload is a named bare-metal run: it brings a fresh machine up and drives it,
// writing what it checks to log.
type Workload struct {
	Name string
	Doc  string
	Run  func(m *machine.Machine, log io.Writer) error
}

// Workloads lists the bare-metal runs in the order `saccbook run` shows them.
var Workloads = []Workload{
	{"job", "one MEMCPY job's whole path: enumeration, bring-up, doorbell, fetch, DMA, completion, MSI", OneJob},
	{"mixed", "NOP, MEMCPY and XFORM through the IOMMU, ring wrap with phase flips, a CQ-full stall, errors, a masked vector, reset and recovery", Mixed},
}

// FindWorkload looks a workload up by name.
func FindWorkload(name string) (Workload, bool) {
	for _, w := range Workloads {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}

// Interrupt-window message for the completion vector in these runs.
const (
	msiAddr = sacc.IntWindowBase
	msiData = 0x41 // vector 0x41
	limit   = sim.Time(100_000)
)

// OneJob copies 256 bytes with one descriptor and an interrupt.
func OneJob(m *machine.Machine, log io.Writer) error {
	h, err := Enumerate(m)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "found %04x:%04x at 00:03.0; BAR0 at %#x, BAR1 at %#x\n", sacc.VendorID, sacc.DeviceID, h.BAR0, h.BAR1)
	h.EnableMSIX(sacc.MSIXVectorComplete, msiAddr, msiData)
	if err := h.Start(SQAddr, 16, CQAddr, 16); err != nil {
		return err
	}
	fmt.Fprintf(log, "rings at SQ %#x, CQ %#x; READY at %d ns\n", h.SQ, h.CQ, m.Now())
	payload := []byte("a job crosses the link: the device reads this by DMA and writes it back elsewhere.")
	src, dst := uint64(DataAddr), uint64(DataAddr+0x1000)
	m.WriteBytes(src, payload)
	submitted := m.Now()
	h.Put(sacc.Descriptor{Src: src, Dst: dst, Length: uint32(len(payload)), Opcode: sacc.OpMEMCPY, Flags: sacc.FlagInterrupt, ReqID: 1})
	h.Ring()
	c, err := h.Wait(limit)
	if err != nil {
		return err
	}
	got := make([]byte, len(payload))
	m.ReadBytes(dst, got)
	if !bytes.Equal(got, payload) || c.Status != sacc.StatusOK {
		return fmt.Errorf("job 1: status %v, copied %q", c.Status, got)
	}
	for m.Step() {
	}
	fmt.Fprintf(log, "job 1 completed: req_id %#x, %d bytes, phase %d, %d ns after the doorbell; interrupts on vector %#x: %d\n",
		c.ReqID, c.ResultLen, c.Phase, m.Now()-submitted, msiData, m.Interrupts().Count(msiData))
	return nil
}

// Mixed exercises most of the device and the IOMMU in one deterministic run; its
// trace is a golden file.
func Mixed(m *machine.Machine, log io.Writer) error {
	h, err := Enumerate(m)
	if err != nil {
		return err
	}
	h.EnableMSIX(sacc.MSIXVectorComplete, msiAddr, msiData)
	h.EnableMSIX(sacc.MSIXVectorError, msiAddr, msiData+1)

	// IOMMU on: rings and buffers identity-mapped, source read-only.
	const tables, faultLog = 0x0040_0000, 0x0050_0000
	pt, err := NewPageTables(m, tables, 64*sacc.PageSize)
	if err != nil {
		return err
	}
	if err := errors.Join(
		pt.MapRange(SQAddr, SQAddr, sacc.PageSize, sacc.PTERead),
		pt.MapRange(CQAddr, CQAddr, sacc.PageSize, sacc.PTERead|sacc.PTEWrite),
		pt.MapRange(DataAddr, DataAddr, 4*sacc.PageSize, sacc.PTERead),
		pt.MapRange(DataAddr+0x10000, DataAddr+0x10000, 4*sacc.PageSize, sacc.PTERead|sacc.PTEWrite),
	); err != nil {
		return err
	}
	u := IOMMU{m}
	u.Enable(pt.Root, faultLog, 8)

	if err := h.Start(SQAddr, 8, CQAddr, 4); err != nil {
		return err
	}
	src, dst := uint64(DataAddr), uint64(DataAddr+0x10000)
	m.Fill(src, 2*sacc.PageSize, 0x5A)

	expect := func(what string, c sacc.Completion, err error, id uint32, st sacc.Status) error {
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if c.ReqID != id || c.Status != st {
			return fmt.Errorf("%s: got req_id %#x status %v, want %#x %v", what, c.ReqID, c.Status, id, st)
		}
		fmt.Fprintf(log, "%-36s req_id=%#x status=%v phase=%d\n", what, c.ReqID, c.Status, c.Phase)
		return nil
	}
	run := func(what string, d sacc.Descriptor, st sacc.Status) error {
		h.Put(d)
		h.Ring()
		c, err := h.Wait(limit)
		return expect(what, c, err, d.ReqID, st)
	}
	steps := []struct {
		what string
		d    sacc.Descriptor
		st   sacc.Status
	}{
		{"NOP", sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 0x10, Flags: sacc.FlagInterrupt}, sacc.StatusOK},
		{"MEMCPY across a page boundary", sacc.Descriptor{Src: src + 0xF00, Dst: dst + 0xF80, Length: 0x200, Opcode: sacc.OpMEMCPY, ReqID: 0x11}, sacc.StatusOK},
		{"XFORM", sacc.Descriptor{Src: src, Dst: dst + 0x2000, Length: 64, Opcode: sacc.OpXFORM, ReqID: 0x12, Flags: sacc.FlagInterrupt}, sacc.StatusOK},
		{"bad opcode", sacc.Descriptor{Opcode: 0x0100, ReqID: 0x13}, sacc.StatusBadOpcode},
		{"length 0", sacc.Descriptor{Src: src, Dst: dst, Opcode: sacc.OpMEMCPY, ReqID: 0x14}, sacc.StatusBadLength},
		{"write into a read-only mapping", sacc.Descriptor{Src: dst, Dst: src, Length: 16, Opcode: sacc.OpMEMCPY, ReqID: 0x15}, sacc.StatusBadAddress},
		{"unmapped source", sacc.Descriptor{Src: 0x0300_0000, Dst: dst, Length: 16, Opcode: sacc.OpMEMCPY, ReqID: 0x16}, sacc.StatusBadAddress},
	}
	for _, s := range steps {
		if err := run(s.what, s.d, s.st); err != nil {
			return err
		}
	}
	for _, f := range u.Faults() {
		fmt.Fprintf(log, "iommu fault: iova=%#x reason=%v access=%d\n", f.IOVA, f.Reason, f.Access)
	}

	// CQ-full stall: three jobs in one doorbell fill a 4-entry CQ (one slot stays
	// empty); the fourth waits until CQ_HEAD moves.
	for i := range 4 {
		h.Put(sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 0x20 + uint32(i)})
	}
	h.Ring()
	m.Advance(limit)
	for i := range 4 {
		c, err := h.Wait(limit)
		if err := expect("batch after stall", c, err, 0x20+uint32(i), sacc.StatusOK); err != nil {
			return err
		}
	}

	// Stale IOTLB: remap the destination page elsewhere without invalidating; the
	// device still writes the old page until the invalidation.
	other := uint64(DataAddr + 0x40000)
	if err := pt.Map(dst, other, sacc.PTERead|sacc.PTEWrite); err != nil {
		return err
	}
	if err := run("copy through a stale IOTLB entry", sacc.Descriptor{Src: src, Dst: dst, Length: 8, Opcode: sacc.OpMEMCPY, ReqID: 0x30}, sacc.StatusOK); err != nil {
		return err
	}
	u.Invalidate(dst)
	m.Fill(src+0x100, 8, 0xC3)
	if err := run("copy after invalidation", sacc.Descriptor{Src: src + 0x100, Dst: dst, Length: 8, Opcode: sacc.OpMEMCPY, ReqID: 0x31}, sacc.StatusOK); err != nil {
		return err
	}
	fmt.Fprintf(log, "old page holds %#x, new page holds %#x\n", m.Read(dst, 8), m.Read(other, 8))

	// A masked completion vector: the PBA bit is set, the message waits for unmask.
	entryCtl := h.BAR1 + sacc.MSIXEntryControl
	m.Write(entryCtl, 4, sacc.MSIXEntryMasked)
	h.SetReg(sacc.RegIRQAck, sacc.IRQCompletion)
	if err := run("completion while vector 0 is masked", sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 0x40, Flags: sacc.FlagInterrupt}, sacc.StatusOK); err != nil {
		return err
	}
	fmt.Fprintf(log, "PBA %#x\n", m.Read(h.BAR1+sacc.MSIXPBAOffset, 8))
	m.Write(entryCtl, 4, 0)
	m.Advance(limit)

	// A device error (doorbell out of range), then reset and recovery.
	h.SetReg(sacc.RegSQTail, 99)
	m.Advance(limit)
	fmt.Fprintf(log, "after doorbell 99: STATUS %#x ERR_CODE %#x\n", h.Reg(sacc.RegSTATUS), h.Reg(sacc.RegErrCode))
	h.SetReg(sacc.RegCTRL, sacc.CtrlReset)
	if err := h.Start(SQAddr, 8, CQAddr, 4); err != nil {
		return err
	}
	if err := run("NOP after reset", sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 0x50}, sacc.StatusOK); err != nil {
		return err
	}
	for m.Step() {
	}
	fmt.Fprintf(log, "done at %d ns; %d completion interrupts\n", m.Now(), m.Interrupts().Count(msiData))
	return nil
}
