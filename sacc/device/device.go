// Package device is the SACC endpoint: the device model of the specification's
// §§2–9. The file reads top to bottom as the device's life — state, configuration
// space, register reads and writes, the doorbell, the command pipeline (fetch,
// execute, move data, post the completion), interrupts, errors and reset — with the
// section of the specification beside each rule it enforces.
//
// The device knows nothing of drivers. It sees register accesses that the platform
// routes to its BARs, and it reaches host memory only through the Bus it is given,
// which puts every DMA through the IOMMU.
//
// Built to the upstream-v0.1 profile, the device is upstream's QEMU model instead:
// upstream.go holds that engine, read beside upstream's qemu/sacc.c; this file's
// entry points hand it BAR0 and nothing else differs.
package device

import (
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/mem"
	"github.com/saccbook/saccbook/sacc/pci"
	"github.com/saccbook/saccbook/sacc/profile"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Bus is the platform as the device sees it from below.
type Bus interface {
	// Translate turns a DMA address into a physical one for one access, through the
	// IOMMU when translation is on (§10). A fault has already been logged.
	Translate(iova uint64, access uint8) (phys uint64, missed bool, fault sacc.FaultReason)
	// RAM is host memory; DMA may only touch RAM.
	RAM() *mem.RAM
	// Interrupt delivers a 32-bit write into the interrupt window (§1).
	Interrupt(addr uint64, data uint32)
}

// Event operations the device schedules for itself.
const (
	opReady uint32 = iota + 1
	opFetch
	opExecute
	opMoveData
	opPost
	opDeliverMSI
	opLateWrite
)

// lateWrite is part of a completion entry still on its way to memory.
type lateWrite struct {
	phys     uint64
	data     [sacc.CompletionSize]byte
	from, to int
}

// segment is a piece of a DMA range that is contiguous in physical memory.
type segment struct {
	iova, phys, n uint64
}

// Device is one SACC endpoint.
type Device struct {
	bus    Bus
	sim    *sim.Sim
	trace  *trace.Tracer
	cost   *sim.Cost
	quirks quirk.Set
	engine profile.Engine
	cfg    *pci.Function
	msixAt uint32 // offset of the MSI-X capability; 0 when the profile has none

	// core is every piece of state that is a plain value, kept together so that
	// Save can copy and compare it at once.
	core
	msix

	// The command in flight: the ranges it moves and its data.
	src, dst []segment
	bounce   []byte // scratch for an overlapping copy, within one event
	// Completion writes that a quirk holds back, in the order they will land.
	late []lateWrite
}

// core is the device's state that holds no references.
type core struct {
	// Register file (§5).
	ctrl, status, errCode, scratch uint32
	sqBase, cqBase                 uint64
	sqSize, cqSize                 uint32
	irqStatus                      uint32

	// Ring state (§7): cleared by disable and reset.
	sqHead, sqTail uint32 // next descriptor to fetch; the driver's last doorbell
	cqTail, cqHead uint32 // next completion slot to write; the driver's last CQ_HEAD
	phase          uint8  // phase of the completions being written now (§7.2)
	busy           bool   // a pipeline event is scheduled
	stalled        bool   // waiting for a CQ slot (§7.3)

	// epoch invalidates scheduled pipeline events when the device is disabled,
	// reset or halted: an event carries the epoch it was scheduled in.
	epoch uint64

	// The command in flight.
	desc     sacc.Descriptor
	result   sacc.Status
	walkCost sim.Time
	descBuf  [sacc.DescriptorSize]byte

	posting [sacc.CompletionSize]byte // the completion being posted
}

// msix is the MSI-X state (§9): the table and pending bits live in BAR1. It is
// apart from core because it changes seldom, so that saved states share it.
type msix struct {
	msixTable [sacc.MSIXTableSize]byte
	pba       uint64
}

// New realizes a device at power-on, built to profile p.
func New(bus Bus, s *sim.Sim, tr *trace.Tracer, cost *sim.Cost, quirks quirk.Set, p profile.Profile) *Device {
	d := &Device{bus: bus, sim: s, trace: tr, cost: cost, quirks: quirks, engine: p.Engine, core: core{phase: 1}}
	d.cfg = newConfigSpace(p)
	d.msixAt = d.cfg.FindCapability(sacc.CapIDMSIX)
	for v := range sacc.MSIXVectors {
		d.msixTable[v*sacc.MSIXEntrySize+sacc.MSIXEntryControl] = sacc.MSIXEntryMasked // masked at power-on (§9)
	}
	return d
}

// newConfigSpace builds the configuration space of §§2–3, with the identity and
// link the profile gives.
func newConfigSpace(p profile.Profile) *pci.Function {
	bars := [sacc.NumBARs]uint64{sacc.BAR0Size}
	if p.MSIX {
		bars[1] = sacc.BAR1Size
	}
	f := pci.New(pci.Header{
		VendorID: sacc.VendorID, DeviceID: sacc.DeviceID,
		ClassCode: sacc.ClassCode, Revision: sacc.Revision,
		SubsystemVendorID: p.SubsystemVendorID, SubsystemID: p.SubsystemID,
		HeaderType: sacc.HeaderType, InterruptPin: sacc.InterruptPin,
		BARSizes: bars,
	})
	// PCI Express capability, version 2, endpoint, with a true-looking link (§3).
	pcie := uint32(sacc.CfgPCIeCapOffset)
	f.AddCapability(pcie, sacc.CapIDPCIe)
	f.Set16(pcie+sacc.CapPCIeFlagsOff, sacc.PCIeCapVersion|sacc.PCIeDevTypeEP<<4)
	f.Set32(pcie+sacc.CapPCIeDevCapOff, p.DevCapabilities)
	f.Set32(pcie+sacc.CapPCIeDevCap2Off, p.DevCapabilities2)
	f.Set32(pcie+sacc.CapPCIeLinkCapOff, p.LinkCapabilities)
	f.Set16(pcie+sacc.CapPCIeLinkStaOff, p.LinkStatus)
	f.Set32(pcie+sacc.CapPCIeLinkCap2, p.LinkCapabilities2)
	if !p.MSIX {
		return f // upstream v0.1: no MSI-X capability, no BAR1
	}
	// MSI-X with two vectors, table and PBA in BAR1 (§4, §9).
	msix := uint32(sacc.CfgMSIXCapOffset)
	f.AddCapability(msix, sacc.CapIDMSIX)
	f.Set16(msix+sacc.CapMSIXControlOff, sacc.MSIXVectors-1)
	f.SetWritable(msix+sacc.CapMSIXControlOff, 2, sacc.MSIXCtrlWritable)
	f.Set32(msix+sacc.CapMSIXTableOff, sacc.MSIXTableBIR)
	f.Set32(msix+sacc.CapMSIXPBAOff, sacc.MSIXPBABIR)
	return f
}

// Config is the device's configuration space; the platform routes ECAM and port
// accesses to it.
func (d *Device) Config() *pci.Function { return d.cfg }

// ConfigWritten tells the device that software wrote its configuration space, so
// that a vector unmasked through Message Control can fire (§9).
func (d *Device) ConfigWritten() { d.deliverPending() }

func (d *Device) guestError(off uint64, size int, reason uint64, val uint64) {
	d.trace.EmitGuestError(off, uint64(size), reason, val)
}

func (d *Device) ready() bool  { return d.status&sacc.StatusReady != 0 }
func (d *Device) halted() bool { return d.status&sacc.StatusError != 0 }

// ---------------------------------------------------------------------------
// BAR0: register file and doorbell page (§5, §5.1)

// validAccess applies the v1 access rules of §5: 32-bit accesses everywhere, 64-bit
// ones also at SQ_BASE and CQ_BASE, nothing narrower or misaligned.
func validAccess(off uint64, size int) bool {
	switch size {
	case 4:
		return off%4 == 0
	case 8:
		return off == sacc.RegSQBaseLo || off == sacc.RegCQBaseLo
	}
	return false
}

// ReadBAR0 serves a CPU read of BAR0 at offset off.
func (d *Device) ReadBAR0(off uint64, size int) uint64 {
	if d.engine == profile.EngineUpstreamV01 {
		return d.upstreamRead(off, size)
	}
	if !validAccess(off, size) {
		d.guestError(off, size, trace.ErrWidth, 0)
		return allOnes(size)
	}
	var v uint64
	if size == 8 {
		v = uint64(d.reg32(uint32(off))) | uint64(d.reg32(uint32(off+4)))<<32
	} else {
		v = uint64(d.reg32(uint32(off)))
	}
	d.trace.EmitRegRead(off, uint64(size), v)
	return v
}

// reg32 is the value software reads at a 32-bit offset: WO and reserved read 0.
func (d *Device) reg32(off uint32) uint32 {
	switch off {
	case sacc.RegMAGIC:
		return sacc.MagicValue
	case sacc.RegVERSION:
		return sacc.VersionValue
	case sacc.RegCTRL:
		return d.ctrl // RESET self-clears, so only ENABLE can read 1
	case sacc.RegSTATUS:
		return d.status
	case sacc.RegSQBaseLo:
		return uint32(d.sqBase)
	case sacc.RegSQBaseHi:
		return uint32(d.sqBase >> 32)
	case sacc.RegSQSize:
		return d.sqSize
	case sacc.RegCQBaseLo:
		return uint32(d.cqBase)
	case sacc.RegCQBaseHi:
		return uint32(d.cqBase >> 32)
	case sacc.RegCQSize:
		return d.cqSize
	case sacc.RegIRQStatus:
		return d.irqStatus
	case sacc.RegErrCode:
		return d.errCode
	case sacc.RegSCRATCH:
		return d.scratch
	}
	return 0
}

// WriteBAR0 serves a CPU write of BAR0 at offset off.
func (d *Device) WriteBAR0(off uint64, size int, v uint64) {
	if d.engine == profile.EngineUpstreamV01 {
		d.upstreamWrite(off, size, v)
		return
	}
	if !validAccess(off, size) {
		d.guestError(off, size, trace.ErrWidth, v)
		return
	}
	if d.latch(uint32(off), size, v) {
		// The register holds its new value before the event that records the
		// write, so that a run held at that event (a monitor's "after event
		// N") already shows it, as every later look will.
		d.trace.EmitRegWrite(off, uint64(size), v)
		return
	}
	d.trace.EmitRegWrite(off, uint64(size), v)
	if size == 8 {
		// A 64-bit base write is both halves at once; the enable rule applies as
		// to each half.
		d.writeReg32(uint32(off), uint32(v))
		d.writeReg32(uint32(off+4), uint32(v>>32))
		return
	}
	d.writeReg32(uint32(off), uint32(v))
}

// latch takes a write to a plain register — a ring register while the device
// is disabled, SCRATCH — that only stores its value and causes no event of its
// own, and reports whether it did. Every other write goes through writeReg32,
// after its sacc_reg_write, so that the events it causes follow it.
func (d *Device) latch(off uint32, size int, v uint64) bool {
	plain := func(o uint32) bool {
		switch o {
		case sacc.RegSQBaseLo, sacc.RegSQBaseHi, sacc.RegSQSize, sacc.RegCQBaseLo, sacc.RegCQBaseHi, sacc.RegCQSize:
			return d.ctrl&sacc.CtrlEnable == 0
		case sacc.RegSCRATCH:
			return true
		}
		return false
	}
	if !plain(off) || size == 8 && !plain(off+4) {
		return false
	}
	d.writeReg32(off, uint32(v))
	if size == 8 {
		d.writeReg32(off+4, uint32(v>>32))
	}
	return true
}

func (d *Device) writeReg32(off uint32, v uint32) {
	switch off {
	case sacc.RegCTRL:
		d.writeCtrl(v)
	case sacc.RegSQBaseLo, sacc.RegSQBaseHi, sacc.RegSQSize,
		sacc.RegCQBaseLo, sacc.RegCQBaseHi, sacc.RegCQSize:
		// v1 (§5): ring registers are frozen while CTRL.ENABLE = 1.
		if d.ctrl&sacc.CtrlEnable != 0 {
			d.guestError(uint64(off), 4, trace.ErrRingWhileOn, uint64(v))
			return
		}
		d.storeRingReg(off, v)
	case sacc.RegCQHead, sacc.RegCQHeadDB: // §5.1: CQ_HEAD_DB has the same effect
		d.writeCQHead(v)
	case sacc.RegIRQAck:
		if v&sacc.IRQCompletion != 0 && d.irqStatus&sacc.IRQCompletion != 0 {
			d.irqStatus &^= sacc.IRQCompletion
			d.pba &^= 1 << sacc.MSIXVectorComplete // the condition is gone
			d.trace.EmitIRQAck()
		}
	case sacc.RegSCRATCH:
		d.scratch = v
	case sacc.RegSQTail:
		d.ringDoorbell(v)
	case sacc.RegMAGIC, sacc.RegVERSION, sacc.RegSTATUS, sacc.RegIRQStatus, sacc.RegErrCode:
		d.guestError(uint64(off), 4, trace.ErrReadOnly, uint64(v)) // §5: ignored
	default:
		d.guestError(uint64(off), 4, trace.ErrNotImplemented, uint64(v)) // reserved: ignored
	}
}

// writeCtrl handles ENABLE and RESET (§7.5).
func (d *Device) writeCtrl(v uint32) {
	if v&sacc.CtrlReset != 0 {
		d.reset()
		return
	}
	was := d.ctrl&sacc.CtrlEnable != 0
	on := v&sacc.CtrlEnable != 0
	switch {
	case on && !was:
		if d.halted() {
			// A halted device stays halted until RESET (§7.6): ENABLE is
			// remembered but READY never comes.
			d.ctrl |= sacc.CtrlEnable
			d.guestError(sacc.RegCTRL, 4, trace.ErrHalted, uint64(v))
			return
		}
		if !sacc.ValidRingConfig(d.sqBase, d.sqSize, d.cqBase, d.cqSize) {
			// v1 (§7.5): refused; ENABLE does not stick, READY stays 0.
			d.trace.EmitEnableRefused(uint64(d.sqSize), uint64(d.cqSize), d.sqBase, d.cqBase)
			d.deviceError(sacc.StatusRingConfig)
			return
		}
		d.ctrl |= sacc.CtrlEnable
		d.clearRingState()
		d.trace.EmitEnable(uint64(d.sqSize), uint64(d.cqSize))
		// v1 (§7.5): READY one enable latency later, never in the same instant.
		d.sim.Schedule(max(d.cost.EnableLatency, 1), d, opReady, d.epoch, 0)
	case !on && was:
		// v1 (§7.5): stop, clear READY, IRQ_STATUS and ring state; keep the ring
		// registers, STATUS.ERROR and ERR_CODE.
		d.ctrl &^= sacc.CtrlEnable
		d.status &^= sacc.StatusReady
		d.irqStatus = 0
		d.pba &^= 1 << sacc.MSIXVectorComplete
		d.clearRingState()
		d.trace.EmitDisable()
	}
}

// clearRingState drops indices, phases, CQ_HEAD and any work in flight.
func (d *Device) clearRingState() {
	d.sqHead, d.sqTail, d.cqTail, d.cqHead = 0, 0, 0, 0
	d.phase = 1 // §7.2: the expected phase starts at 1 on both sides
	d.busy, d.stalled = false, false
	d.epoch++
}

// reset is CTRL.RESET (§7.5): every BAR0 register back to its power-on value.
// Configuration space and the MSI-X table are untouched.
func (d *Device) reset() {
	d.ctrl, d.status, d.errCode, d.scratch = 0, 0, 0, 0
	d.sqBase, d.cqBase, d.sqSize, d.cqSize = 0, 0, 0, 0
	d.irqStatus = 0
	d.pba = 0 // no interrupt condition survives a reset
	d.clearRingState()
	d.trace.EmitReset()
}

// ringDoorbell is a write to SQ_TAIL (§5.1, §7.6).
func (d *Device) ringDoorbell(v uint32) {
	switch {
	case d.halted():
		d.guestError(sacc.RegSQTail, 4, trace.ErrHalted, uint64(v))
	case !d.ready():
		d.deviceError(sacc.StatusNotEnabled)
	case v >= d.sqSize:
		d.deviceError(sacc.StatusDoorbell)
	default:
		d.sqTail = v
		d.trace.EmitDoorbell(uint64(v), uint64(d.sqHead))
		// The write has landed (its trip across the link is the posted write's,
		// counted by whoever issued it): the fetch starts now.
		d.kick(0)
	}
}

// writeCQHead returns completion slots to the device (§7.3).
func (d *Device) writeCQHead(v uint32) {
	switch {
	case d.halted():
		d.guestError(sacc.RegCQHead, 4, trace.ErrHalted, uint64(v))
	case !d.ready():
		d.guestError(sacc.RegCQHead, 4, trace.ErrNotReady, uint64(v))
	case v >= d.cqSize:
		d.deviceError(sacc.StatusDoorbell)
	default:
		d.cqHead = v
		d.trace.EmitCQHeadWrite(uint64(v))
		if d.stalled && !sacc.RingFull(d.cqTail, d.cqHead, d.cqSize) {
			// §7.3: the device resumes by itself once a slot is free.
			d.stalled = false
			d.trace.EmitCQResume(uint64(v))
			d.kick(0)
		}
	}
}

// kick starts the pipeline if it is idle.
func (d *Device) kick(delay sim.Time) {
	if d.busy || d.stalled {
		return
	}
	d.busy = true
	d.sim.Schedule(delay, d, opFetch, d.epoch, 0)
}

// ---------------------------------------------------------------------------
// The command pipeline (§6, §7)

// HandleEvent runs one scheduled step of the device.
func (d *Device) HandleEvent(ev sim.Event) {
	switch ev.Op {
	case opDeliverMSI:
		// A posted write already on the wire lands whatever the device does next.
		d.deliverMSI(ev.A, uint32(ev.B))
		return
	case opLateWrite:
		// Every held-back write has the same delay, so they land in order.
		w := d.late[0]
		d.late = d.late[1:]
		d.bus.RAM().Write(w.phys+uint64(w.from), w.data[w.from:w.to])
		return
	}
	if ev.A != d.epoch {
		return // scheduled before a disable, reset or halt
	}
	switch ev.Op {
	case opReady:
		d.status |= sacc.StatusReady
		d.trace.EmitReady()
	case opFetch:
		d.fetch()
	case opExecute:
		d.execute()
	case opMoveData:
		d.moveData()
	case opPost:
		d.post()
	}
}

func (d *Device) busMaster() bool {
	return d.cfg.BusMaster() || d.quirks.Has(quirk.IgnoreBusMaster)
}

// fetch reads the next descriptor, in ring order (§7.1), once a CQ slot is sure to
// be free for its completion (§7.3).
func (d *Device) fetch() {
	if d.sqHead == d.sqTail {
		d.busy = false
		d.trace.EmitIdle(uint64(d.sqHead))
		return
	}
	if sacc.RingFull(d.cqTail, d.cqHead, d.cqSize) && !d.quirks.Has(quirk.NoCQFullCheck) {
		d.busy, d.stalled = false, true
		d.trace.EmitCQFull(uint64(d.cqTail), uint64(d.cqHead))
		return
	}
	addr := d.sqBase + uint64(d.sqHead)*sacc.DescriptorSize
	d.trace.EmitFetch(uint64(d.sqHead), addr)
	if !d.busMaster() {
		d.deviceError(sacc.StatusBadAddress) // §7.6: no DMA without bus mastering
		return
	}
	seg, walk, ok := d.mapOne(addr, sacc.DescriptorSize, sacc.AccessRead)
	if !ok {
		d.deviceError(sacc.StatusBadAddress) // §7.6: fault while fetching
		return
	}
	d.bus.RAM().Read(seg.phys, d.descBuf[:])
	d.trace.EmitDMARead(seg.iova, seg.phys, seg.n)
	d.desc = sacc.DecodeDescriptor(d.descBuf[:])
	d.sim.Schedule(walk+d.cost.DMAReadLatency+d.cost.Transfer(sacc.DescriptorSize), d, opExecute, d.epoch, 0)
}

// execute checks a command in the order of §6.3 — opcode, length, source range,
// destination range — translating every page before a byte moves.
func (d *Device) execute() {
	desc := d.desc
	d.trace.EmitDescriptor(uint64(desc.ReqID), uint64(desc.Opcode), uint64(desc.Length), uint64(desc.Flags))
	d.src, d.dst, d.walkCost = d.src[:0], d.dst[:0], 0
	switch {
	case desc.Opcode == sacc.OpNOP:
		d.finish(sacc.StatusOK, d.cost.DeviceCommand)
		return
	case desc.Opcode != sacc.OpMEMCPY && desc.Opcode != sacc.OpXFORM:
		d.finish(sacc.StatusBadOpcode, d.cost.DeviceCommand)
		return
	case desc.Length == 0 || desc.Length > sacc.MaxLength:
		d.finish(sacc.StatusBadLength, d.cost.DeviceCommand)
		return
	}
	if !d.busMaster() {
		d.deviceError(sacc.StatusBadAddress) // §7.6: any DMA attempt without bus mastering
		return
	}
	n := uint64(desc.Length)
	var ok bool
	if d.src, ok = d.mapRange(d.src, desc.Src, n, sacc.AccessRead); !ok {
		d.finish(sacc.StatusBadAddress, d.cost.DeviceCommand+d.walkCost)
		return
	}
	if d.dst, ok = d.mapRange(d.dst, desc.Dst, n, sacc.AccessWrite); !ok {
		if d.quirks.Has(quirk.WriteBeforeCheck) {
			// The bug: the pages translated before the fault were already written.
			d.copySegments(d.bus.RAM())
		}
		d.finish(sacc.StatusBadAddress, d.cost.DeviceCommand+d.walkCost)
		return
	}
	for _, s := range d.src {
		d.trace.EmitDMARead(s.iova, s.phys, s.n)
	}
	// The source streams in over the link; the data moves when it has arrived.
	d.sim.Schedule(d.cost.DeviceCommand+d.walkCost+d.cost.DMAReadLatency+d.cost.Transfer(n), d, opMoveData, d.epoch, 0)
}

// mapRange translates [iova, iova+n) page by page in address order and returns its
// physically contiguous pieces; it stops at the first page that fails, so a failed
// command logs at most one IOMMU fault (§6.3).
func (d *Device) mapRange(out []segment, iova, n uint64, access uint8) ([]segment, bool) {
	if iova+n < iova {
		return out, false // wraps the address space
	}
	for n > 0 {
		chunk := min(n, sacc.PageSize-iova&sacc.PageMask)
		seg, walk, ok := d.mapOne(iova, chunk, access)
		d.walkCost += walk
		if !ok {
			return out, false
		}
		if k := len(out) - 1; k >= 0 && out[k].phys+out[k].n == seg.phys {
			out[k].n += chunk
		} else {
			out = append(out, seg)
		}
		iova += chunk
		n -= chunk
	}
	return out, true
}

// mapOne translates a piece that lies within one page and checks that it is RAM:
// DMA to anything else is a bad address.
func (d *Device) mapOne(iova, n uint64, access uint8) (segment, sim.Time, bool) {
	phys, missed, fault := d.bus.Translate(iova, access)
	var walk sim.Time
	if missed {
		walk = d.cost.IOTLBMiss
	}
	if fault != 0 || !d.bus.RAM().Contains(phys, n) {
		return segment{}, walk, false
	}
	return segment{iova: iova, phys: phys, n: n}, walk, true
}

// moveData copies the source to the destination with memmove semantics (§6.3),
// XOR-ing for XFORM, then schedules the completion once the posted writes land.
// The bytes move at the instant the whole source has arrived, which is what makes
// the result that of reading everything first, even for overlapping ranges.
func (d *Device) moveData() {
	ram := d.bus.RAM()
	n := uint64(d.desc.Length)
	if d.overlaps() {
		// The device reads the whole source into its own buffer first.
		if uint64(cap(d.bounce)) < n {
			d.bounce = make([]byte, n)
		}
		buf := d.bounce[:n]
		off := uint64(0)
		for _, s := range d.src {
			ram.Read(s.phys, buf[off:off+s.n])
			off += s.n
		}
		off = 0
		for _, s := range d.dst {
			ram.Write(s.phys, buf[off:off+s.n])
			off += s.n
		}
	} else {
		d.copySegments(ram)
	}
	if d.desc.Opcode == sacc.OpXFORM {
		for _, s := range d.dst {
			ram.XOR(s.phys, s.n, sacc.XFORMKey)
		}
	}
	for _, s := range d.dst {
		d.trace.EmitDMAWrite(s.iova, s.phys, s.n)
	}
	// The engine streams: it writes each page-sized chunk as soon as that chunk has
	// arrived, so only the last chunk's write is still on the link now.
	d.finish(sacc.StatusOK, d.cost.Transfer(min(n, sacc.PageSize))+d.cost.DMAWriteLatency)
}

// overlaps reports whether any source piece shares physical bytes with any
// destination piece.
func (d *Device) overlaps() bool {
	for _, s := range d.src {
		for _, t := range d.dst {
			if s.phys < t.phys+t.n && t.phys < s.phys+s.n {
				return true
			}
		}
	}
	return false
}

// copySegments copies piece by piece when source and destination are disjoint.
func (d *Device) copySegments(ram *mem.RAM) {
	si, di := 0, 0
	var soff, doff uint64
	for si < len(d.src) && di < len(d.dst) {
		s, t := d.src[si], d.dst[di]
		chunk := min(s.n-soff, t.n-doff)
		ram.Copy(t.phys+doff, s.phys+soff, chunk)
		soff += chunk
		doff += chunk
		if soff == s.n {
			si, soff = si+1, 0
		}
		if doff == t.n {
			di, doff = di+1, 0
		}
	}
}

// finish records the command's status and schedules its completion.
func (d *Device) finish(status sacc.Status, delay sim.Time) {
	d.result = status
	if status != sacc.StatusOK {
		// §7.6: a per-command error sets ERR_CODE, not STATUS.ERROR.
		d.errCode = uint32(status)
		d.trace.EmitCommandError(uint64(d.desc.ReqID), uint64(status))
	}
	d.sim.Schedule(delay, d, opPost, d.epoch, 0)
}

// post writes the completion — all other fields first, the phase last (§7.2) —
// advances the rings, and raises the completion interrupt (§9).
func (d *Device) post() {
	if !d.busMaster() {
		d.deviceError(sacc.StatusBadAddress)
		return
	}
	addr := d.cqBase + uint64(d.cqTail)*sacc.CompletionSize
	seg, _, ok := d.mapOne(addr, sacc.CompletionSize, sacc.AccessWrite)
	if !ok {
		d.deviceError(sacc.StatusBadAddress) // §7.6: fault while posting a completion
		return
	}
	wantIRQ := d.desc.Flags&sacc.FlagInterrupt != 0
	cpl := sacc.Completion{ReqID: d.desc.ReqID, Status: d.result, Phase: d.phase}
	if d.result == sacc.StatusOK && d.desc.Opcode != sacc.OpNOP {
		cpl.ResultLen = d.desc.Length
	}
	entry := d.posting[:]
	cpl.Encode(entry)
	ram := d.bus.RAM()
	switch {
	case wantIRQ && d.quirks.Has(quirk.MSIBeforeCompletion):
		// The bug: the MSI leaves first and the entry lands after it.
		d.completionInterrupt()
		wantIRQ = false
		d.writeLate(seg.phys, 0, sacc.CompletionSize, d.cost.MSIDelivery+d.cost.DMAWriteLatency)
	case d.quirks.Has(quirk.PhaseFirst):
		// The bug: the phase lands first; the body follows a write latency later.
		ram.Write(seg.phys+sacc.CplPhaseOff, entry[sacc.CplPhaseOff:])
		d.writeLate(seg.phys, 0, sacc.CplBodySize, d.cost.DMAWriteLatency)
	default:
		ram.Write(seg.phys, entry[:sacc.CplBodySize])
		ram.Write(seg.phys+sacc.CplPhaseOff, entry[sacc.CplPhaseOff:])
	}
	d.trace.EmitDMAWrite(seg.iova, seg.phys, seg.n)

	// The indices move before the event that records the post, so that a run
	// held at sacc_cq_post shows the slot posted and the descriptor's SQ slot
	// the driver's again (§7.1); the phase flips with its own event.
	posted := d.cqTail
	wrapped := false
	if d.cqTail++; d.cqTail == d.cqSize {
		d.cqTail = 0
		wrapped = true
	}
	if d.sqHead++; d.sqHead == d.sqSize {
		d.sqHead = 0
	}
	d.trace.EmitCQPost(uint64(posted), uint64(cpl.ReqID), uint64(cpl.Status), uint64(cpl.Phase))
	// §7.2: each side inverts its phase when its index wraps.
	if wrapped {
		d.phase ^= 1
		d.trace.EmitPhaseFlip(uint64(d.phase))
	}
	if wantIRQ {
		d.completionInterrupt()
	}
	if d.sqHead == d.sqTail {
		d.busy = false
		d.trace.EmitIdle(uint64(d.sqHead))
		return
	}
	d.sim.Schedule(0, d, opFetch, d.epoch, 0)
}

// writeLate lands bytes [from, to) of the entry being posted at phys after delay;
// only quirks use it.
func (d *Device) writeLate(phys uint64, from, to int, delay sim.Time) {
	d.late = append(d.late, lateWrite{phys: phys, data: d.posting, from: from, to: to})
	d.sim.Schedule(max(delay, 1), d, opLateWrite, 0, 0)
}

// ---------------------------------------------------------------------------
// Interrupts: MSI-X (§9)

// completionInterrupt applies the v1 completion interrupt rule: if IRQ_STATUS bit 0
// is already set nothing more is sent; otherwise set it and send vector 0.
func (d *Device) completionInterrupt() {
	if d.irqStatus&sacc.IRQCompletion != 0 {
		return
	}
	d.irqStatus |= sacc.IRQCompletion
	d.signal(sacc.MSIXVectorComplete)
}

func (d *Device) msixControl() uint16 {
	if d.msixAt == 0 {
		return 0 // no MSI-X capability (upstream v0.1): disabled, for good
	}
	return d.cfg.Get16(d.msixAt + sacc.CapMSIXControlOff)
}

func (d *Device) entry(v int) sacc.MSIXEntry {
	return sacc.DecodeMSIXEntry(d.msixTable[v*sacc.MSIXEntrySize:])
}

// signal raises vector v: sent at once, left pending in the PBA while masked, or
// dropped while MSI-X is disabled (polling still works through IRQ_STATUS).
func (d *Device) signal(v int) {
	ctl := d.msixControl()
	switch {
	case ctl&sacc.MSIXCtrlEnable == 0:
		d.trace.EmitMSIXSuppressed(uint64(v), trace.SuppressDisabled)
	case ctl&sacc.MSIXCtrlFunctionMask != 0 || d.entry(v).Masked():
		d.pba |= 1 << v
		d.trace.EmitMSIXPending(uint64(v))
	default:
		d.send(v)
	}
}

// send puts vector v's message on the wire: a posted write that lands one MSI
// delivery time later.
func (d *Device) send(v int) {
	if !d.busMaster() {
		d.trace.EmitMSIXSuppressed(uint64(v), trace.SuppressBusMaster)
		return
	}
	e := d.entry(v)
	d.trace.EmitMSIXSend(uint64(v), e.Addr, uint64(e.Data))
	d.sim.Schedule(d.cost.MSIDelivery, d, opDeliverMSI, e.Addr, uint64(e.Data))
}

// deliverMSI lands a message: into the interrupt window untranslated, anywhere
// else as an ordinary DMA write through the IOMMU (§1, §10).
func (d *Device) deliverMSI(addr uint64, data uint32) {
	if sacc.InIntWindow(addr) {
		d.bus.Interrupt(addr, data)
		return
	}
	seg, _, ok := d.mapOne(addr, 4, sacc.AccessWrite)
	if !ok || addr&3 != 0 {
		d.trace.EmitMSIXSuppressed(0, trace.SuppressFault)
		return
	}
	d.bus.RAM().Store(seg.phys, 4, uint64(data))
	d.trace.EmitDMAWrite(seg.iova, seg.phys, 4)
}

// deliverPending sends every pending vector that is no longer masked (§9).
func (d *Device) deliverPending() {
	if d.pba == 0 {
		return
	}
	ctl := d.msixControl()
	if ctl&sacc.MSIXCtrlEnable == 0 || ctl&sacc.MSIXCtrlFunctionMask != 0 {
		return
	}
	for v := range sacc.MSIXVectors {
		if d.pba&(1<<v) != 0 && !d.entry(v).Masked() {
			d.pba &^= 1 << v
			d.send(v)
		}
	}
}

// ReadBAR1 serves a CPU read of the MSI-X table and PBA; 32- and 64-bit aligned
// accesses only.
func (d *Device) ReadBAR1(off uint64, size int) uint64 {
	if (size != 4 && size != 8) || off%uint64(size) != 0 {
		d.guestError(off, size, trace.ErrWidth, 0)
		return allOnes(size)
	}
	var v uint64
	for i := 0; i < size; i += 4 {
		v |= uint64(d.bar1Word(off+uint64(i))) << (8 * i)
	}
	return v
}

func (d *Device) bar1Word(off uint64) uint32 {
	switch {
	case off < sacc.MSIXTableSize:
		return le32(d.msixTable[off:])
	case off == sacc.MSIXPBAOffset:
		return uint32(d.pba)
	case off == sacc.MSIXPBAOffset+4:
		return uint32(d.pba >> 32)
	}
	return 0
}

// WriteBAR1 serves a CPU write of the MSI-X table; the PBA is read-only.
func (d *Device) WriteBAR1(off uint64, size int, v uint64) {
	if (size != 4 && size != 8) || off%uint64(size) != 0 {
		d.guestError(off, size, trace.ErrWidth, v)
		return
	}
	for i := 0; i < size; i += 4 {
		o := off + uint64(i)
		w := uint32(v >> (8 * i))
		switch {
		case o < sacc.MSIXTableSize:
			if o%sacc.MSIXEntrySize == sacc.MSIXEntryControl {
				w &= sacc.MSIXEntryMasked // only the mask bit is defined
			}
			putLE32(d.msixTable[o:], w)
		case o == sacc.MSIXPBAOffset || o == sacc.MSIXPBAOffset+4:
			d.guestError(o, 4, trace.ErrReadOnly, uint64(w))
		}
	}
	d.deliverPending()
}

// ---------------------------------------------------------------------------
// Errors (§7.6, §8)

// deviceError halts the device until RESET: STATUS.ERROR and ERR_CODE set, READY
// cleared, work in flight dropped, and the error vector raised.
func (d *Device) deviceError(code sacc.Status) {
	d.status = d.status&^sacc.StatusReady | sacc.StatusError
	d.errCode = uint32(code)
	d.busy, d.stalled = false, false
	d.epoch++
	d.trace.EmitDeviceError(uint64(code))
	d.signal(sacc.MSIXVectorError) // v1 (§7.6)
}

// ---------------------------------------------------------------------------
// Inspection (for monitors and views; no side effects)

// State is a snapshot of the device's registers and ring state.
type State struct {
	Ctrl, Status, ErrCode, Scratch uint32
	SQBase, CQBase                 uint64
	SQSize, CQSize                 uint32
	IRQStatus                      uint32
	SQHead, SQTail                 uint32
	CQTail, CQHead                 uint32
	Phase                          uint8
	Busy, Stalled                  bool
	PBA                            uint64
	MSIX                           [sacc.MSIXVectors]sacc.MSIXEntry
	MSIXControl                    uint16
}

// State returns a snapshot.
func (d *Device) State() State {
	s := State{
		Ctrl: d.ctrl, Status: d.status, ErrCode: d.errCode, Scratch: d.scratch,
		SQBase: d.sqBase, CQBase: d.cqBase, SQSize: d.sqSize, CQSize: d.cqSize,
		IRQStatus: d.irqStatus, SQHead: d.sqHead, SQTail: d.sqTail,
		CQTail: d.cqTail, CQHead: d.cqHead, Phase: d.phase,
		Busy: d.busy, Stalled: d.stalled, PBA: d.pba, MSIXControl: d.msixControl(),
	}
	for v := range sacc.MSIXVectors {
		s.MSIX[v] = d.entry(v)
	}
	return s
}

func allOnes(size int) uint64 {
	if size >= 8 {
		return ^uint64(0)
	}
	return 1<<(8*size) - 1
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func putLE32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// storeRingReg stores v in the ring geometry register at off (the SQ's and
// CQ's base halves and sizes), and reports whether off is one. Every version
// of the contract stores them alike; when it may is each version's rule.
func (d *Device) storeRingReg(off, v uint32) bool {
	switch off {
	case sacc.RegSQBaseLo:
		d.sqBase = d.sqBase&^0xFFFF_FFFF | uint64(v)
	case sacc.RegSQBaseHi:
		d.sqBase = d.sqBase&0xFFFF_FFFF | uint64(v)<<32
	case sacc.RegSQSize:
		d.sqSize = v
	case sacc.RegCQBaseLo:
		d.cqBase = d.cqBase&^0xFFFF_FFFF | uint64(v)
	case sacc.RegCQBaseHi:
		d.cqBase = d.cqBase&0xFFFF_FFFF | uint64(v)<<32
	case sacc.RegCQSize:
		d.cqSize = v
	default:
		return false
	}
	return true
}
