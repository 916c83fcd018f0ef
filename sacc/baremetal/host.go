// Package baremetal drives a machine the way firmware and a minimal polling driver
// would, with no operating system and no CPU model: a fixed sequence of accesses
// through the address map. It brings the device up for the terminal run, the golden
// traces, the fuzzers and the benchmarks. The driver proper, written like a Linux
// PCI driver above a costed CPU, lives elsewhere; this is the shortest correct path.
package baremetal

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
)

// Default placement of things in RAM and in the MMIO window.
const (
	BAR0Addr = sacc.MMIOWindowBase
	BAR1Addr = sacc.MMIOWindowBase + sacc.BAR0Size

	SQAddr   = 0x0010_0000
	CQAddr   = 0x0011_0000 // after an SQ of up to 2048 entries; see CQAddrFor
	DataAddr = 0x0020_0000 // buffers for commands
)

// CQAddrFor is where the CQ goes beside an SQ of sqSize entries at SQAddr: at
// CQAddr, or, for an SQ that reaches past it (more than 2048 entries), on the
// first page after the SQ. Either way a CQ of up to 4096 entries ends below
// DataAddr.
func CQAddrFor(sqSize uint32) uint64 {
	end := SQAddr + (uint64(sqSize)*sacc.DescriptorSize+sacc.PageMask)&^uint64(sacc.PageMask)
	return max(CQAddr, end)
}

// Host is a brought-up device: BARs assigned, memory and bus mastering on.
type Host struct {
	M          *machine.Machine
	BAR0, BAR1 uint64

	SQ, CQ         uint64
	SQSize, CQSize uint32
	sqTail, cqHead uint32
	inFlight       uint32
	phase          uint8 // the phase the next new completion will carry
	desc           [sacc.DescriptorSize]byte
	cpl            [sacc.CompletionSize]byte
}

func cfgRead(m *machine.Machine, reg uint32, size int) uint32 {
	return uint32(m.Read(sacc.ECAMAddress(sacc.SACCBus, sacc.SACCDevice, sacc.SACCFunction, reg), size))
}

func cfgWrite(m *machine.Machine, reg uint32, size int, v uint32) {
	m.Write(sacc.ECAMAddress(sacc.SACCBus, sacc.SACCDevice, sacc.SACCFunction, reg), size, uint64(v))
}

// Enumerate finds the SACC endpoint by scanning bus 0 through ECAM, sizes and
// assigns its BARs, and enables memory decoding and bus mastering.
func Enumerate(m *machine.Machine) (*Host, error) {
	found := false
	for dev := uint32(0); dev < 32; dev++ {
		id := uint32(m.Read(sacc.ECAMAddress(0, dev, 0, sacc.CfgVendorID), 4))
		if id&0xFFFF == sacc.AbsentVendorID {
			continue
		}
		if id == sacc.DeviceID<<16|sacc.VendorID && dev == sacc.SACCDevice {
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("no device %04x:%04x on bus 0", sacc.VendorID, sacc.DeviceID)
	}
	h := &Host{M: m, BAR0: BAR0Addr, BAR1: BAR1Addr, phase: 1}
	for i, addr := range []uint64{BAR0Addr, BAR1Addr} {
		reg := uint32(sacc.CfgBAR0 + 4*i)
		cfgWrite(m, reg, 4, 0xFFFF_FFFF)
		size := sacc.BARSizeFromMask(cfgRead(m, reg, 4))
		if size == 0 && i == 1 {
			// No BAR1: a device without MSI-X (the upstream-v0.1 profile). Firmware
			// leaves an unimplemented BAR unassigned.
			h.BAR1 = 0
			continue
		}
		if size == 0 || addr%size != 0 {
			return nil, fmt.Errorf("BAR%d: size %#x does not fit at %#x", i, size, addr)
		}
		cfgWrite(m, reg, 4, uint32(addr))
	}
	cfgWrite(m, sacc.CfgCommand, 2, sacc.CmdMemorySpace|sacc.CmdBusMaster)
	if magic := m.Read(h.BAR0+sacc.RegMAGIC, 4); magic != sacc.MagicValue {
		return nil, fmt.Errorf("MAGIC reads %#x, want %#x", magic, sacc.MagicValue)
	}
	return h, nil
}

// Reg reads a 32-bit BAR0 register.
func (h *Host) Reg(off uint32) uint32 { return uint32(h.M.Read(h.BAR0+uint64(off), 4)) }

// SetReg writes a 32-bit BAR0 register.
func (h *Host) SetReg(off uint32, v uint32) { h.M.Write(h.BAR0+uint64(off), 4, uint64(v)) }

// Start programs the rings, enables the device and waits for READY (§7.5).
func (h *Host) Start(sqBase uint64, sqSize uint32, cqBase uint64, cqSize uint32) error {
	sqEnd, cqEnd := sqBase+uint64(sqSize)*sacc.DescriptorSize, cqBase+uint64(cqSize)*sacc.CompletionSize
	if sqBase < cqEnd && cqBase < sqEnd {
		return fmt.Errorf("rings overlap: SQ %#x-%#x, CQ %#x-%#x", sqBase, sqEnd-1, cqBase, cqEnd-1)
	}
	h.SQ, h.SQSize, h.CQ, h.CQSize = sqBase, sqSize, cqBase, cqSize
	h.sqTail, h.cqHead, h.phase, h.inFlight = 0, 0, 1, 0
	h.M.Tracer().EmitDriverCQ(uint64(h.cqHead), uint64(h.phase))
	h.M.Fill(sqBase, uint64(sqSize)*sacc.DescriptorSize, 0)
	h.M.Fill(cqBase, uint64(cqSize)*sacc.CompletionSize, 0)
	h.M.Write(h.BAR0+sacc.RegSQBaseLo, 8, sqBase)
	h.SetReg(sacc.RegSQSize, sqSize)
	h.M.Write(h.BAR0+sacc.RegCQBaseLo, 8, cqBase)
	h.SetReg(sacc.RegCQSize, cqSize)
	h.SetReg(sacc.RegCTRL, sacc.CtrlEnable)
	for h.Reg(sacc.RegSTATUS)&(sacc.StatusReady|sacc.StatusError) == 0 {
		if !h.M.Step() {
			return fmt.Errorf("device never became ready")
		}
	}
	if st := h.Reg(sacc.RegSTATUS); st&sacc.StatusError != 0 {
		return fmt.Errorf("enable refused: ERR_CODE %#x", h.Reg(sacc.RegErrCode))
	}
	return nil
}

// EnableMSIX programs vector v to write data to addr, unmasks it and enables MSI-X.
func (h *Host) EnableMSIX(v int, addr uint64, data uint32) {
	var e [sacc.MSIXEntrySize]byte
	sacc.MSIXEntry{Addr: addr, Data: data}.Encode(e[:])
	base := h.BAR1 + sacc.MSIXTableOffset + uint64(v)*sacc.MSIXEntrySize
	for i := 0; i < sacc.MSIXEntrySize; i += 4 {
		h.M.Write(base+uint64(i), 4, uint64(e[i])|uint64(e[i+1])<<8|uint64(e[i+2])<<16|uint64(e[i+3])<<24)
	}
	msix := uint32(sacc.CfgMSIXCapOffset) + sacc.CapMSIXControlOff
	cfgWrite(h.M, msix, 2, cfgRead(h.M, msix, 2)|sacc.MSIXCtrlEnable)
}

// Put writes a descriptor into the next SQ slot without ringing the doorbell; it
// returns false when the ring is full.
func (h *Host) Put(d sacc.Descriptor) bool {
	// A slot is the host's again only once its completion has been consumed, and
	// one slot stays empty so that full and empty differ.
	if h.inFlight == h.SQSize-1 {
		return false
	}
	d.Encode(h.desc[:])
	h.M.WriteBytes(h.SQ+uint64(h.sqTail)*sacc.DescriptorSize, h.desc[:])
	h.sqTail = (h.sqTail + 1) % h.SQSize
	h.inFlight++
	return true
}

// InFlight counts submitted descriptors whose completions are not yet consumed.
func (h *Host) InFlight() uint32 { return h.inFlight }

// Ring writes the doorbell with the current tail.
func (h *Host) Ring() { h.SetReg(sacc.RegSQTail, h.sqTail) }

// Poll checks the CQ slot at the head once, in the order of §7.2: it loads the
// phase field, and only when the phase is the expected one does it read the
// entry, which the device wrote before the phase. (So every look shows in the
// trace as the 2-byte load of the phase it looks at.) A new completion is
// consumed and returned; CQ_HEAD is written back through the doorbell page so
// the device may reuse the slot. An entry that is not new is not read, and
// Poll returns the zero Completion.
func (h *Host) Poll() (sacc.Completion, bool) {
	slot := h.CQ + uint64(h.cqHead)*sacc.CompletionSize
	if uint8(h.M.Read(slot+sacc.CplPhaseOff, sacc.CplPhaseFieldSize))&sacc.CplPhaseBit != h.phase {
		return sacc.Completion{}, false
	}
	h.M.ReadBytes(slot, h.cpl[:])
	c := sacc.DecodeCompletion(h.cpl[:])
	h.inFlight--
	if h.cqHead++; h.cqHead == h.CQSize {
		h.cqHead = 0
		h.phase ^= 1
	}
	h.M.Tracer().EmitDriverCQ(uint64(h.cqHead), uint64(h.phase))
	h.SetReg(sacc.RegCQHeadDB, h.cqHead)
	return c, true
}

// Wait polls, stepping the clock between looks, until a completion arrives or
// limit nanoseconds of virtual time pass.
func (h *Host) Wait(limit sim.Time) (sacc.Completion, error) {
	deadline := h.M.Now() + limit
	for {
		if c, ok := h.Poll(); ok {
			return c, nil
		}
		t, ok := h.M.Sim().Next()
		if !ok || t > deadline {
			return sacc.Completion{}, fmt.Errorf("no completion within %d ns (STATUS %#x, ERR_CODE %#x)",
				limit, h.Reg(sacc.RegSTATUS), h.Reg(sacc.RegErrCode))
		}
		h.M.Step()
	}
}
