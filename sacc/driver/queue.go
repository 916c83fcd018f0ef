package driver

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/quirk"
)

// full reports whether the SQ has no free slot. A slot is free again once its
// completion has been consumed; one slot stays empty so that full and empty
// differ (§7.3).
func (dev *Device) full() bool {
	if dev.q.Has(quirk.FullIsTailEqHead) {
		// The bug: "full" is taken to be tail == head, which is what empty looks
		// like, so the driver fills the last slot and the device sees an empty ring.
		return dev.count >= int(dev.size)
	}
	return dev.count == int(dev.size)-1
}

// allocID picks a free req_id: the slot number is as good as any, and it can
// never be in flight twice.
func (dev *Device) allocID() uint32 {
	if dev.q.Has(quirk.ReqIDReuse) {
		return 0 // the bug: every request is req_id 0
	}
	for {
		id := dev.nextID % dev.size
		dev.nextID++
		if dev.inflight[id] == nil {
			return id
		}
	}
}

// queue writes one descriptor into the next SQ slot (no doorbell).
func (dev *Device) queue(r *Request) error {
	if dev.bypass != nil {
		return fmt.Errorf("sacc: queue owned by a user process: %w", ErrRingFull)
	}
	if dev.full() {
		return ErrRingFull
	}
	c := dev.k.CPU
	r.ReqID = dev.allocID()
	r.Done, r.Err, r.Status, r.ResultLen = false, nil, 0, 0
	r.Submitted = c.Now()
	dev.inflight[r.ReqID] = r
	dev.count++
	var flags uint16
	if r.IRQ {
		flags |= sacc.FlagInterrupt
	}
	slot := dev.sqCPU + uint64(dev.sqTail%dev.size)*sacc.DescriptorSize
	c.Store64(slot+sacc.DescSrcOff, r.Src)
	c.Store64(slot+sacc.DescDstOff, r.Dst)
	c.Store32(slot+sacc.DescLenOff, r.Length)
	c.Store16(slot+sacc.DescOpOff, r.Opcode)
	c.Store16(slot+sacc.DescFlagsOff, flags)
	c.Store32(slot+sacc.DescReqIDOff, r.ReqID)
	dev.advanceSQTail()
	dev.Stats.Submitted++
	return nil
}

// advanceSQTail moves the tail to the next slot, wrapping at the ring's end: an
// SQ_TAIL of the ring size or more halts the device (§7.6). Under
// doorbell-out-of-range it does not wrap, and the doorbell carries the ring size.
func (dev *Device) advanceSQTail() {
	dev.sqTail++
	if dev.sqTail == dev.size && !dev.q.Has(quirk.DoorbellOutOfRange) {
		dev.sqTail = 0
	}
}

// ring publishes every queued descriptor with one doorbell.
func (dev *Device) ring() {
	dev.ringDoorbell()
	dev.Stats.Doorbells++
}

// ringDoorbell writes SQ_TAIL behind a write barrier: wmb makes the descriptor
// stores visible in memory before the tail write that hands them to the device
// (§7.4). Under missing-wmb the barrier is left out, which x86 forgives and arm64
// does not.
func (dev *Device) ringDoorbell() {
	if !dev.q.Has(quirk.MissingWMB) {
		dev.k.CPU.WMB()
	}
	dev.regs.WritelRelaxed(sacc.RegSQTail, dev.sqTail)
}

// Submit queues one request and rings the doorbell.
func (dev *Device) Submit(r *Request) error {
	if err := dev.queue(r); err != nil {
		return err
	}
	dev.ring()
	return nil
}

// SubmitBatch queues requests and rings the doorbell once for all of them; it
// returns how many it queued before the ring filled.
func (dev *Device) SubmitBatch(rs []*Request) (int, error) {
	n := 0
	for _, r := range rs {
		if err := dev.queue(r); err != nil {
			if n > 0 {
				dev.ring()
			}
			return n, err
		}
		n++
	}
	if n > 0 {
		dev.ring()
	}
	return n, nil
}

// Reap consumes every new completion: an entry is new when its phase equals the
// expected phase (§7.2). The phase is read first; rmb keeps the body loads after
// it; then CQ_HEAD tells the device the slots are free again (§7.3). It returns
// how many completions it consumed.
func (dev *Device) Reap() int {
	n := 0
	// The budget: between two CQ_HEAD writes the device can post at most
	// size − 1 entries (§7.3), so one pass never needs more than a ring's worth.
	// A pass that gets that far is going round entries it has already consumed
	// (no-phase-flip): stop instead of spinning for ever.
	for n < int(dev.size) {
		cpl, ok := dev.nextCompletion()
		if !ok {
			break
		}
		dev.complete(cpl.ReqID, cpl.ResultLen, cpl.Status)
		n++
		dev.advanceCQHead()
	}
	if n > 0 {
		dev.returnCQSlots()
	}
	return n
}

// nextCompletion reads the CQ entry at the head if it is new: its phase first,
// then rmb, then the body, so that no load of the body sees what was there
// before the phase said the entry is new (§7.2). Under body-before-phase the body
// is read first and may be stale.
func (dev *Device) nextCompletion() (sacc.Completion, bool) {
	slot := dev.cqCPU + uint64(dev.cqHead)*sacc.CompletionSize
	if dev.q.Has(quirk.BodyBeforePhase) {
		cpl := dev.completionBody(slot)
		return cpl, dev.completionPhase(slot) == dev.phase
	}
	if dev.completionPhase(slot) != dev.phase {
		return sacc.Completion{}, false
	}
	dev.rmb()
	return dev.completionBody(slot), true
}

func (dev *Device) completionPhase(slot uint64) uint8 {
	return uint8(dev.k.CPU.Load16(slot+sacc.CplPhaseOff) & sacc.CplPhaseBit)
}

func (dev *Device) completionBody(slot uint64) sacc.Completion {
	c := dev.k.CPU
	reqID, resultLen := c.Load32(slot+sacc.CplReqIDOff), c.Load32(slot+sacc.CplResultLenOff)
	return sacc.Completion{ReqID: reqID, ResultLen: resultLen, Status: sacc.Status(c.Load16(slot + sacc.CplStatusOff))}
}

// rmb orders the body loads after the phase load. Under missing-rmb it is left
// out, and on arm64 a body load may be performed before the phase load.
func (dev *Device) rmb() {
	if !dev.q.Has(quirk.MissingRMB) {
		dev.k.CPU.RMB()
	}
}

// advanceCQHead moves past a consumed entry; at the ring's end the next lap
// carries the other phase (§7.2). Under no-phase-flip the expected phase stays.
func (dev *Device) advanceCQHead() {
	if dev.cqHead++; dev.cqHead == dev.size {
		dev.cqHead = 0
		if !dev.q.Has(quirk.NoPhaseFlip) {
			dev.phase ^= 1
		}
	}
	dev.k.TraceDriverCQ(dev.cqHead, dev.phase)
}

// returnCQSlots tells the device, with one CQ_HEAD write, that every consumed
// slot is free again (§7.3). Under no-cq-head the write never happens and the
// device stalls on a CQ it thinks is full.
func (dev *Device) returnCQSlots() {
	if !dev.q.Has(quirk.NoCQHead) {
		dev.regs.Writel(sacc.RegCQHeadDB, dev.cqHead)
	}
}

func (dev *Device) complete(reqID, resultLen uint32, status sacc.Status) {
	if reqID >= dev.size || dev.inflight[reqID] == nil {
		dev.pdev.Info("completion for unknown req_id %#x (status %v)", reqID, status)
		return
	}
	r := dev.inflight[reqID]
	dev.inflight[reqID] = nil
	dev.count--
	r.Done, r.Status, r.ResultLen, r.Completed = true, status, resultLen, dev.k.CPU.Now()
	dev.Stats.Completed++
}

// Wait waits for r: by polling the CQ (polling mode), or by sleeping until the
// interrupt handler has reaped it. It gives up after the configured timeout of
// virtual time, and then checks whether the device has failed.
func (dev *Device) Wait(r *Request) error {
	c := dev.k.CPU
	deadline := c.Now() + dev.drv.cfg.Timeout
	for !r.Done && r.Err == nil {
		if c.Now() > deadline {
			dev.Stats.Timeouts++
			return dev.timedOut(r)
		}
		if dev.drv.cfg.Interrupts {
			c.Idle(deadline + 1)
		} else if dev.Reap() == 0 {
			c.Relax()
		}
	}
	if r.Err != nil {
		return r.Err
	}
	if r.Status != sacc.StatusOK {
		return fmt.Errorf("sacc: req_id %#x: %v", r.ReqID, r.Status)
	}
	return nil
}

// Do submits one request and waits for it.
func (dev *Device) Do(r *Request) error {
	if err := dev.Submit(r); err != nil {
		return err
	}
	return dev.Wait(r)
}

// timedOut decides what a missing completion means: a halted device is reset
// and every request in flight fails; otherwise the request is simply late.
func (dev *Device) timedOut(r *Request) error {
	st := dev.readReg(sacc.RegSTATUS)
	if st&sacc.StatusError != 0 {
		dev.recover()
		return r.Err
	}
	dev.pdev.Info("req_id %#x timed out after %d ns (STATUS %#x, %d in flight)", r.ReqID, dev.drv.cfg.Timeout, st, dev.count)
	return ErrTimeout
}

// ---------------------------------------------------------------------------
// Interrupts

// completionIRQ handles vector 0: acknowledge, read a register back, then drain,
// so that a completion posted at any moment is either found by the drain or
// raises a new interrupt (§9).
func (dev *Device) completionIRQ(v uint8, _ any) kernel.IRQReturn {
	dev.Stats.Interrupts++
	if dev.ackAndReap() == 0 {
		dev.Stats.SpuriousInterrupts++
	}
	return kernel.IRQHandled
}

// ackAndReap acknowledges the completion interrupt and drains the CQ, returning
// how many completions it consumed.
//
// The acknowledgement is a posted write: it reaches the device one write latency
// after the CPU issues it. A completion the device posts in that window finds
// IRQ_STATUS still set and sends no MSI, so the drain must not run before the
// acknowledgement has landed. Reading a register of the same device makes sure of
// that: the read cannot pass the posted write, and its completion cannot pass the
// device's completion writes before it (memory-barriers.txt on flushing posted
// writes; dma-api-howto.rst, "flush write buffers … by reading a register"). After
// the read-back, every completion is either in memory for the drain or comes
// after the acknowledgement, with an interrupt of its own.
//
// Under drain-then-ack the order is reversed, and a completion that lands between
// the two raises nothing; under ack-without-readback the read-back is left out,
// and a completion posted while the acknowledgement is on the wire is lost.
func (dev *Device) ackAndReap() int {
	switch {
	case dev.q.Has(quirk.DrainThenAck):
		n := dev.Reap()
		dev.writeReg(sacc.RegIRQAck, sacc.IRQCompletion)
		return n
	case dev.q.Has(quirk.AckWithoutReadback):
		dev.writeReg(sacc.RegIRQAck, sacc.IRQCompletion)
		return dev.Reap()
	}
	dev.writeReg(sacc.RegIRQAck, sacc.IRQCompletion)
	dev.readReg(sacc.RegIRQStatus) // flush the posted acknowledgement
	return dev.Reap()
}

// errorIRQ handles vector 1: the device halted. Recovery polls registers with
// deadlines and brings the rings up again, which is no work for interrupt
// context: the handler queues it (queue_work), and the kernel runs it in process
// context as soon as the interrupt has returned.
func (dev *Device) errorIRQ(v uint8, _ any) kernel.IRQReturn {
	dev.k.QueueWork(&dev.resetWork)
	return kernel.IRQHandled
}

// ---------------------------------------------------------------------------
// Errors and recovery (§7.6)

// recover resets a halted device, in process context. The order is the one that
// is safe on real hardware: first stop the device's DMA (reset, and read STATUS
// back until it shows the reset took effect), then revoke the processes'
// doorbell mappings, and only then fail what was in flight, so that the buffers
// their submitters unmap and free can no longer be reached by the device. Then
// the rings come up again from scratch.
func (dev *Device) recover() {
	st, code := dev.readReg(sacc.RegSTATUS), dev.readReg(sacc.RegErrCode)
	if st&sacc.StatusError == 0 {
		return
	}
	if dev.starting || dev.acquired != stepChrdev {
		// A start under way sees ERROR in STATUS itself and fails; a probe or a
		// remove in progress unwinds. Resetting from here would only enable the
		// device again, and an enable it refuses would raise this again.
		return
	}
	dev.pdev.Info("device error: STATUS %#x ERR_CODE %#x (%v); resetting", st, code, sacc.Status(code))
	if !dev.stop(sacc.CtrlReset) {
		dev.pdev.Info("recovery failed: the device did not come out of reset")
		return
	}
	dev.Stats.Resets++
	dev.revokeUserMappings(false)
	dev.failAll(fmt.Errorf("%w (ERR_CODE %#x: %v)", ErrDeviceErr, code, sacc.Status(code)))
	if err := dev.restart(); err != nil {
		dev.pdev.Info("recovery failed: %v", err)
	}
}

// restart brings the kernel's rings up again after a reset: a process that owned
// the queue loses it (its rings are unmapped now that the device is stopped), the
// CQ is zeroed so that no stale phase survives, and the device is enabled.
func (dev *Device) restart() error {
	if b := dev.bypass; b != nil {
		dev.bypass = nil
		dev.unmapUser(b.owner.Proc, b.sq)
		dev.unmapUser(b.owner.Proc, b.cq)
		dev.pdev.Info("queue taken back from pid %d by the reset", b.owner.Proc.PID)
	}
	c := dev.k.CPU
	for off := uint64(0); off < uint64(dev.size)*sacc.CompletionSize; off += 8 {
		c.Store64(dev.cqCPU+off, 0)
	}
	c.WMB()
	return dev.start()
}

// failAll completes every request in flight with err.
func (dev *Device) failAll(err error) {
	for i, r := range dev.inflight {
		if r != nil {
			r.Err = err
			dev.inflight[i] = nil
		}
	}
	dev.count = 0
}

// Reset resets and restarts the device on request (for example after a driver
// bug left it halted), in the order recover uses: stop, revoke, fail, restart.
func (dev *Device) Reset() error {
	if !dev.stop(sacc.CtrlReset) {
		return fmt.Errorf("sacc: reset: %w", ErrDeviceErr)
	}
	dev.Stats.Resets++
	dev.revokeUserMappings(false)
	dev.failAll(ErrDeviceErr)
	return dev.restart()
}
