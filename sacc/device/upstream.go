package device

import (
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/trace"
)

// The upstream-v0.1 engine: BAR0 as upstream's QEMU model serves it
// (github.com/jnros/sacc, qemu/sacc.c). Read it beside that file: each function
// below is one of its callbacks. It shares the register fields of the v1 device
// and nothing else: no enable gate, no events (the ring runs inside the doorbell
// write, in no virtual time), no interrupts, no device errors. docs/SPEC.md,
// "Upstream v0.1 and v1: every difference", lists what this changes.

// upstreamValid is QEMU's check of an access to one of BAR0's two subregions:
// from 4 bytes up to maxSize, naturally aligned (neither region takes unaligned
// accesses).
func upstreamValid(off uint64, size, maxSize int) bool {
	return size >= 4 && size <= maxSize && off%uint64(size) == 0
}

// upstreamRead serves a read of BAR0. An access QEMU refuses reads 0, as its
// unassigned_mem_read answers (v1 answers all ones).
func (d *Device) upstreamRead(off uint64, size int) uint64 {
	if off >= sacc.DoorbellPage {
		// sacc_mmio_db_read: 4-byte accesses only; every one reads 0, untraced.
		if !upstreamValid(off, size, 4) {
			d.guestError(off, size, trace.ErrWidth, 0)
		}
		return 0
	}
	// The register page takes 4 or 8 bytes anywhere aligned; its callback takes 4
	// at a time, so QEMU splits an 8-byte access in two, low half first.
	if !upstreamValid(off, size, 8) {
		d.guestError(off, size, trace.ErrWidth, 0)
		return 0
	}
	v := uint64(d.upstreamReadReg(uint32(off)))
	if size == 8 {
		v |= uint64(d.upstreamReadReg(uint32(off+4))) << 32
	}
	return v
}

// upstreamReadReg is sacc_mmio_reg_read for 4 bytes at off.
func (d *Device) upstreamReadReg(off uint32) uint32 {
	var v uint32
	switch off {
	case sacc.RegMAGIC:
		v = sacc.MagicValue
	case sacc.RegVERSION:
		v = sacc.VersionValue
	case sacc.RegCTRL:
		v = d.ctrl // whatever was written, RESET included
	case sacc.RegSTATUS:
		v = d.status // nothing ever sets READY or ERROR
	case sacc.RegSQBaseLo:
		v = uint32(d.sqBase)
	case sacc.RegSQBaseHi:
		v = uint32(d.sqBase >> 32)
	case sacc.RegSQSize:
		v = d.sqSize
	case sacc.RegCQBaseLo:
		v = uint32(d.cqBase)
	case sacc.RegCQBaseHi:
		v = uint32(d.cqBase >> 32)
	case sacc.RegCQSize:
		v = d.cqSize
	case sacc.RegCQHead:
		return 0 // upstream returns before its trace point
	case sacc.RegIRQStatus:
		v = d.irqStatus // never set
	case sacc.RegErrCode:
		v = d.errCode // never set
	}
	// IRQ_ACK, SCRATCH and the reserved offsets read 0.
	d.trace.EmitRegRead(uint64(off), 4, uint64(v))
	return v
}

// upstreamWrite serves a write of BAR0; a refused access is dropped.
func (d *Device) upstreamWrite(off uint64, size int, v uint64) {
	if off >= sacc.DoorbellPage {
		if !upstreamValid(off, size, 4) {
			d.guestError(off, size, trace.ErrWidth, v)
			return
		}
		d.upstreamDoorbell(off-sacc.DoorbellPage, uint32(v))
		return
	}
	if !upstreamValid(off, size, 8) {
		d.guestError(off, size, trace.ErrWidth, v)
		return
	}
	d.upstreamWriteReg(uint32(off), uint32(v))
	if size == 8 {
		d.upstreamWriteReg(uint32(off+4), uint32(v>>32))
	}
}

// upstreamWriteReg is sacc_mmio_reg_write for 4 bytes at off: each register it
// knows is stored as written, whatever the device is doing; every other write,
// IRQ_ACK and SCRATCH included, is ignored.
func (d *Device) upstreamWriteReg(off, v uint32) {
	d.trace.EmitRegWrite(uint64(off), 4, uint64(v))
	if d.storeRingReg(off, v) {
		return // at any time: upstream does not freeze them while enabled
	}
	switch off {
	case sacc.RegCTRL:
		d.ctrl = v // ENABLE and RESET are stored and do nothing
	case sacc.RegCQHead:
		d.cqHead = v // stored for the CQ-full check; nothing waits on it
	}
}

// upstreamDoorbell is sacc_mmio_db_write: the new tail taken modulo SQ_SIZE, then
// every descriptor from the device's head to it fetched, executed and completed
// before the write returns.
func (d *Device) upstreamDoorbell(off uint64, v uint32) {
	if off != 0 || d.sqSize == 0 {
		return // CQ_HEAD_DB at 0x1004, the rest of the page, or no ring: ignored, untraced
	}
	d.sqTail = v % d.sqSize
	d.trace.EmitDoorbell(uint64(d.sqTail), uint64(d.sqHead))
	for d.sqHead != d.sqTail {
		desc := d.upstreamFetch()
		status := sacc.StatusOK
		d.trace.EmitDescriptor(uint64(desc.ReqID), uint64(desc.Opcode), uint64(desc.Length), uint64(desc.Flags))
		if desc.Opcode != sacc.OpNOP {
			// Only NOP runs: anything else completes with status 1, ERR_CODE untouched.
			status = sacc.StatusBadOpcode
			d.trace.EmitCommandError(uint64(desc.ReqID), uint64(status))
		}
		if !d.upstreamPost(desc.ReqID, status, 0) {
			return // the slot stays the device's: the next doorbell fetches it again
		}
		d.sqHead = (d.sqHead + 1) % d.sqSize
	}
}

// upstreamFetch reads the descriptor at the device's head. A failed read is
// traced and the loop goes on with what QEMU's failed DMA read leaves in the
// buffer: zeros, a NOP with req_id 0.
func (d *Device) upstreamFetch() sacc.Descriptor {
	addr := d.sqBase + uint64(d.sqHead)*sacc.DescriptorSize
	buf := d.descBuf[:]
	if !d.upstreamDMA(addr, buf, false) {
		d.trace.EmitSQFetchError(uint64(d.sqHead), addr)
	}
	desc := sacc.DecodeDescriptor(buf)
	d.trace.EmitSQFetch(uint64(d.sqHead), desc.Src, desc.Dst, uint64(desc.Length),
		uint64(desc.Opcode), uint64(desc.Flags), uint64(desc.ReqID))
	return desc
}

// upstreamPost is sacc_cq_post: refuse when the CQ is full, then write bytes 0–13
// of the entry and, in a second write, the phase; advance the tail and invert the
// phase when it wraps. It reports false when the loop must stop.
func (d *Device) upstreamPost(reqID uint32, status sacc.Status, resultLen uint32) bool {
	if d.cqSize == 0 {
		// Upstream computes (cq_tail + 1) % cq_size: a division by zero, which
		// kills the QEMU process. The profile traces it and stops the loop.
		d.guestError(sacc.RegCQSize, 4, trace.ErrDivideByZero, 0)
		return false
	}
	if (d.cqTail+1)%d.cqSize == d.cqHead {
		d.trace.EmitCQFull(uint64(d.cqTail), uint64(d.cqHead))
		return false
	}
	addr := d.cqBase + uint64(d.cqTail)*sacc.CompletionSize
	entry := d.posting[:]
	sacc.Completion{ReqID: reqID, ResultLen: resultLen, Status: status, Phase: d.phase}.Encode(entry)
	if !d.upstreamDMA(addr, entry[:sacc.CplBodySize], true) ||
		!d.upstreamDMA(addr+sacc.CplPhaseOff, entry[sacc.CplPhaseOff:], true) {
		d.trace.EmitCQPostError(uint64(d.cqTail), addr)
		return false
	}
	d.trace.EmitCQPostUpstream(uint64(d.cqTail), uint64(reqID), uint64(status), uint64(resultLen), uint64(d.phase))
	if d.cqTail++; d.cqTail == d.cqSize {
		d.cqTail = 0
		d.phase ^= 1
	}
	return true
}

// upstreamDMA is pci_dma_read or pci_dma_write of b at addr. QEMU moves it page
// by page through the IOMMU: a page that does not translate to RAM reads as zeros
// and takes no write, the others move, and the access as a whole fails. With bus
// mastering off the device's address space is empty and all of it fails.
func (d *Device) upstreamDMA(addr uint64, b []byte, write bool) bool {
	access := uint8(sacc.AccessRead)
	if write {
		access = sacc.AccessWrite
	}
	ram := d.bus.RAM()
	reachable := d.busMaster() && addr+uint64(len(b)) >= addr
	ok := reachable
	for done := 0; done < len(b); {
		iova := addr + uint64(done)
		n := min(uint64(len(b)-done), sacc.PageSize-iova&sacc.PageMask)
		chunk := b[done : done+int(n)]
		done += int(n)
		var seg segment
		mapped := false
		if reachable {
			seg, _, mapped = d.mapOne(iova, n, access)
		}
		switch {
		case !mapped:
			ok = false
			if !write {
				clear(chunk)
			}
		case write:
			ram.Write(seg.phys, chunk)
		default:
			ram.Read(seg.phys, chunk)
		}
	}
	return ok
}
