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
	dev.sqTail++
	if dev.sqTail == dev.size && !dev.q.Has(quirk.DoorbellOutOfRange) {
		dev.sqTail = 0
	}
	dev.Stats.Submitted++
	return nil
}

// ring publishes every queued descriptor with one doorbell: the write barrier
// makes the descriptors visible in memory before the tail write that hands them
// to the device (§7.4).
func (dev *Device) ring() {
	if dev.q.Has(quirk.MissingWMB) {
		dev.regs.WritelRelaxed(sacc.RegSQTail, dev.sqTail) // the bug: no wmb, relaxed write
	} else {
		dev.k.CPU.WMB() // orders the descriptor stores above before the doorbell
		dev.regs.WritelRelaxed(sacc.RegSQTail, dev.sqTail)
	}
	dev.Stats.Doorbells++
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
	c := dev.k.CPU
	n := 0
	// The budget: between two CQ_HEAD writes the device can post at most
	// size − 1 entries (§7.3), so one pass never needs more than a ring's worth.
	// A pass that gets that far is going round entries it has already consumed
	// (no-phase-flip): stop instead of spinning for ever.
	for n < int(dev.size) {
		slot := dev.cqCPU + uint64(dev.cqHead)*sacc.CompletionSize
		var reqID, resultLen uint32
		var status uint16
		if dev.q.Has(quirk.BodyBeforePhase) {
			// The bug: the body is read before the phase says it is new.
			reqID, resultLen, status = c.Load32(slot+sacc.CplReqIDOff), c.Load32(slot+sacc.CplResultLenOff), c.Load16(slot+sacc.CplStatusOff)
		}
		phase := uint8(c.Load16(slot+sacc.CplPhaseOff) & sacc.CplPhaseBit)
		if phase != dev.phase {
			break
		}
		if !dev.q.Has(quirk.BodyBeforePhase) {
			if !dev.q.Has(quirk.MissingRMB) { // the bug: nothing orders the loads below
				c.RMB() // the body may be read only after the phase said it is new
			}
			reqID, resultLen, status = c.Load32(slot+sacc.CplReqIDOff), c.Load32(slot+sacc.CplResultLenOff), c.Load16(slot+sacc.CplStatusOff)
		}
		dev.complete(reqID, resultLen, sacc.Status(status))
		n++
		if dev.cqHead++; dev.cqHead == dev.size {
			dev.cqHead = 0
			if !dev.q.Has(quirk.NoPhaseFlip) {
				dev.phase ^= 1 // §7.2: a new lap writes the other phase
			}
		}
	}
	if n > 0 && !dev.q.Has(quirk.NoCQHead) {
		dev.regs.Writel(sacc.RegCQHeadDB, dev.cqHead)
	}
	return n
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

// completionIRQ handles vector 0: acknowledge first, then drain, so a completion
// posted while draining raises a new interrupt instead of being missed (§9).
func (dev *Device) completionIRQ(v uint8, _ any) kernel.IRQReturn {
	dev.Stats.Interrupts++
	if dev.q.Has(quirk.DrainThenAck) {
		n := dev.Reap() // the bug: a completion that lands now raises nothing
		dev.writeReg(sacc.RegIRQAck, sacc.IRQCompletion)
		if n == 0 {
			dev.Stats.SpuriousInterrupts++
		}
		return kernel.IRQHandled
	}
	dev.writeReg(sacc.RegIRQAck, sacc.IRQCompletion)
	if dev.Reap() == 0 {
		dev.Stats.SpuriousInterrupts++
	}
	return kernel.IRQHandled
}

// errorIRQ handles vector 1: the device halted.
func (dev *Device) errorIRQ(v uint8, _ any) kernel.IRQReturn {
	dev.recover()
	return kernel.IRQHandled
}

// ---------------------------------------------------------------------------
// Errors and recovery (§7.6)

// recover resets a halted device: log the error, fail what was in flight, reset,
// and bring the rings up again from scratch.
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
	dev.failAll(fmt.Errorf("%w (ERR_CODE %#x: %v)", ErrDeviceErr, code, sacc.Status(code)))
	dev.writeReg(sacc.RegCTRL, sacc.CtrlReset)
	dev.Stats.Resets++
	// The rings are zeroed so no stale phase survives the reset.
	c := dev.k.CPU
	for off := uint64(0); off < uint64(dev.size)*sacc.CompletionSize; off += 8 {
		c.Store64(dev.cqCPU+off, 0)
	}
	c.WMB()
	if err := dev.start(); err != nil {
		dev.pdev.Info("recovery failed: %v", err)
	}
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
// bug left it halted).
func (dev *Device) Reset() error {
	dev.failAll(ErrDeviceErr)
	dev.writeReg(sacc.RegCTRL, sacc.CtrlReset)
	dev.Stats.Resets++
	return dev.start()
}
