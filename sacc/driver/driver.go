// Package driver is the SACC driver, written the way a Linux PCI driver is: probe
// acquires one thing at a time (pci_enable_device, pci_request_regions,
// pci_iomap, dma_set_mask_and_coherent, pci_set_master, the rings in coherent
// memory, MSI-X vectors and their handlers, /dev/sacc0) and brings the device up
// in the order §7.5 of the specification asks; a step that fails gives back what
// came before it through one unwind ladder, and remove walks the whole ladder.
// Submission is a descriptor, a write barrier and a doorbell, completions are
// found by phase and returned with CQ_HEAD, interrupts are acknowledged before the
// queue is drained, and errors reset the device. Each bug-injection quirk lives in
// the small helper for the one step it breaks, so the reference path reads as the
// real thing. uapi.go is what user space sees: the ioctl numbers and the layout of
// their argument blocks. The driver reaches the device only through the kernel's
// services and the CPU's operations.
package driver

import (
	"errors"
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/sim"
)

// Name is the driver's name, as the kernel log shows it.
const Name = "sacc"

// DevPath is the character device the driver creates.
const DevPath = "/dev/sacc0"

// Config tunes the driver (module parameters).
type Config struct {
	RingSize   uint32   // SQ and CQ entries; 0 means 64
	Interrupts bool     // completions by MSI-X interrupt instead of polling
	Timeout    sim.Time // how long Wait waits; 0 means 1 ms of virtual time
}

// Errors the driver reports.
var (
	ErrTimeout   = errors.New("sacc: request timed out")
	ErrRingFull  = errors.New("sacc: submission ring full")
	ErrNoDevice  = errors.New("sacc: device not bound")
	ErrDeviceErr = errors.New("sacc: device error; device was reset")
)

// Request is one command (the driver's struct sacc_request).
type Request struct {
	Opcode   uint16
	Src, Dst uint64 // DMA addresses
	Length   uint32
	IRQ      bool // ask for an interrupt on completion

	ReqID     uint32
	Done      bool
	Status    sacc.Status
	ResultLen uint32
	Err       error // set when the request failed without a completion (reset)
	Submitted sim.Time
	Completed sim.Time
}

// Driver is the registered driver (struct pci_driver plus module state).
type Driver struct {
	k   *kernel.Kernel
	cfg Config
	pci *kernel.PCIDriver
	Dev *Device // the bound device, once probed
}

// Device is the per-device state (struct sacc_dev).
type Device struct {
	drv  *Driver
	pdev *kernel.PCIDev
	k    *kernel.Kernel
	regs *kernel.IOMem
	q    quirk.Set

	acquired probeStep // how far probe got: what unwind gives back
	starting bool      // start is waiting for READY

	sqCPU, sqDMA uint64
	cqCPU, cqDMA uint64
	size         uint32

	sqTail   uint32     // next free SQ slot
	cqHead   uint32     // next CQ slot to look at
	phase    uint8      // the phase a new completion carries
	inflight []*Request // by req_id
	count    int        // requests in flight
	nextID   uint32

	bypass *bypassState // set while a process owns the queue
	cdev   *chrdev      // /dev/sacc0, whose doorbell mappings are revoked on reset and remove

	// resetWork recovers a halted device from process context: the error
	// interrupt only queues it (a Linux driver's reset_work).
	resetWork kernel.Work
	// stopped is false while the device may still do DMA into the rings: after a
	// CTRL write, until a STATUS read-back has shown it took effect.
	stopped bool

	Stats Stats
}

// Stats counts the driver's work.
type Stats struct {
	Submitted, Completed, Doorbells, Interrupts, Resets, Timeouts uint64
	SpuriousInterrupts                                            uint64
}

// Register loads the driver (module_init + pci_register_driver): the kernel
// probes every matching device.
func Register(k *kernel.Kernel, cfg Config) (*Driver, error) {
	if cfg.RingSize == 0 {
		cfg.RingSize = 64
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 1_000_000
	}
	d := &Driver{k: k, cfg: cfg}
	d.pci = &kernel.PCIDriver{
		Name:   Name,
		IDs:    []kernel.DeviceID{{Vendor: sacc.VendorID, Device: sacc.DeviceID}},
		Probe:  d.probe,
		Remove: d.remove,
	}
	if err := k.RegisterDriver(d.pci); err != nil {
		return nil, err
	}
	if d.Dev == nil {
		return nil, fmt.Errorf("%w: no SACC device found", ErrNoDevice)
	}
	return d, nil
}

// Unregister unloads the driver (module_exit): remove runs for the device.
func (d *Driver) Unregister() { d.k.UnregisterDriver(d.pci) }

// Config is the driver's configuration.
func (d *Driver) Config() Config { return d.cfg }

// probeStep is how far probe got: each step is something acquired that remove,
// or a probe failing after it, must give back. They are in probe's order.
type probeStep int

const (
	stepNone        probeStep = iota
	stepEnabled               // pci_enable_device
	stepRegions               // pci_request_regions
	stepMapped                // pci_iomap of BAR0
	stepMaster                // pci_set_master
	stepSQ                    // dma_alloc_coherent of the SQ
	stepCQ                    // dma_alloc_coherent of the CQ
	stepVectors               // pci_alloc_irq_vectors
	stepCompleteIRQ           // request_irq of vector 0
	stepErrorIRQ              // request_irq of vector 1
	stepStarted               // the rings programmed and ENABLE written
	stepChrdev                // /dev/sacc0
)

// probe brings the device up as §7.5 asks, acquiring one thing at a time and
// noting each in dev.acquired; if a step fails, unwind gives back everything
// acquired before it, newest first, as the error labels of a Linux probe do.
func (d *Driver) probe(pdev *kernel.PCIDev) (err error) {
	dev := &Device{drv: d, pdev: pdev, k: d.k, q: d.k.Config().Quirks, size: d.cfg.RingSize, stopped: true}
	kernel.InitWork(&dev.resetWork, dev.recover)
	pdev.DriverData = dev // pci_set_drvdata; the PCI core clears it if probe fails
	defer func() {
		if err != nil {
			dev.unwind()
		}
	}()
	if err = pdev.EnableDevice(); err != nil {
		return err
	}
	dev.acquired = stepEnabled
	if err = pdev.RequestRegions(Name); err != nil {
		return err
	}
	dev.acquired = stepRegions
	if dev.regs, err = pdev.IOMap(0); err != nil {
		return err
	}
	dev.acquired = stepMapped
	// Ring bases and descriptor buffer addresses are 64 bits wide (§5, §6.1): the
	// device reaches any DMA address. A mask is not a resource: no rung for it.
	if err = pdev.DMASetMaskAndCoherent(kernel.DMABitMask(64)); err != nil {
		return err
	}
	pdev.SetMaster()
	dev.acquired = stepMaster
	// §7.5: verify MAGIC and VERSION before the driver programs anything.
	if magic := dev.readReg(sacc.RegMAGIC); magic != sacc.MagicValue {
		return fmt.Errorf("bad MAGIC %#x (want %#x): is memory decoding on and BAR0 assigned?", magic, sacc.MagicValue)
	}
	if v := dev.readReg(sacc.RegVERSION); v != sacc.VersionValue {
		return fmt.Errorf("unsupported VERSION %#x", v)
	}
	// Coherent memory for both rings, zeroed (§7.5).
	if dev.sqCPU, dev.sqDMA, err = pdev.DMAAllocCoherent(dev.sqBytes()); err != nil {
		return err
	}
	dev.acquired = stepSQ
	if dev.cqCPU, dev.cqDMA, err = pdev.DMAAllocCoherent(dev.cqBytes()); err != nil {
		return err
	}
	dev.acquired = stepCQ
	dev.inflight = make([]*Request, dev.size)
	// MSI-X: vector 0 for completions, vector 1 for device errors (§9). The error
	// vector is wanted even when completions are polled, so both are always set up.
	if _, err = pdev.AllocIRQVectors(sacc.MSIXVectors, sacc.MSIXVectors); err != nil {
		return err
	}
	dev.acquired = stepVectors
	if err = pdev.RequestIRQ(sacc.MSIXVectorComplete, dev.completionIRQ, "sacc-cq", dev); err != nil {
		return err
	}
	dev.acquired = stepCompleteIRQ
	if err = pdev.RequestIRQ(sacc.MSIXVectorError, dev.errorIRQ, "sacc-err", dev); err != nil {
		return err
	}
	dev.acquired = stepErrorIRQ
	// From here the device may be running: even a start that fails has written
	// the ring registers and ENABLE, so the way out must stop it.
	dev.acquired = stepStarted
	if err = dev.start(); err != nil {
		return err
	}
	dev.cdev = &chrdev{dev: dev}
	d.k.RegisterChrdev(DevPath, dev.cdev)
	dev.acquired = stepChrdev
	d.Dev = dev
	pdev.Info("SACC v%d ready: %d-entry rings, SQ at dma %#x, CQ at dma %#x, %s",
		sacc.VersionValue, dev.size, dev.sqDMA, dev.cqDMA, map[bool]string{true: "interrupts", false: "polling"}[d.cfg.Interrupts])
	return nil
}

// remove undoes probe: the whole ladder, in reverse.
func (d *Driver) remove(pdev *kernel.PCIDev) {
	dev, _ := pdev.DriverData.(*Device)
	if dev == nil {
		return
	}
	dev.unwind()
	pdev.Info("removed")
	d.Dev = nil
}

// unwind gives back what probe acquired, newest first, down to nothing: all of it
// for remove, the steps before the failing one for a probe that failed. Each case
// is one rung of the ladder a Linux probe writes as err_* labels.
func (dev *Device) unwind() {
	pdev := dev.pdev
	for ; dev.acquired > stepNone; dev.acquired-- {
		switch dev.acquired {
		case stepChrdev:
			// No process may ring a device that is going away: revoke every
			// mapping of the doorbell page, then remove the node.
			dev.revokeUserMappings(true)
			dev.k.UnregisterChrdev(DevPath)
		case stepStarted:
			dev.k.CancelWork(&dev.resetWork)
			// Stop the device, and make sure it stopped, before its memory goes
			// away: CTRL=0 is a posted write, and only a STATUS read-back shows it
			// has landed. Then fail what was in flight.
			dev.stop(0)
			dev.failAll(ErrNoDevice)
		case stepErrorIRQ:
			pdev.FreeIRQ(sacc.MSIXVectorError)
		case stepCompleteIRQ:
			pdev.FreeIRQ(sacc.MSIXVectorComplete)
		case stepVectors:
			pdev.FreeIRQVectors()
		case stepCQ:
			dev.freeRing("CQ", dev.cqBytes(), dev.cqCPU, dev.cqDMA)
		case stepSQ:
			dev.freeRing("SQ", dev.sqBytes(), dev.sqCPU, dev.sqDMA)
		case stepMaster:
			pdev.ClearMaster()
		case stepMapped:
			pdev.IOUnmap(dev.regs)
		case stepRegions:
			pdev.ReleaseRegions()
		case stepEnabled:
			pdev.DisableDevice()
		}
	}
}

// freeRing frees one ring's coherent memory, unless the device was never seen to
// stop: then it is left allocated, as a driver leaks memory rather than hand a
// running device's DMA target to someone else.
func (dev *Device) freeRing(name string, n, cpu, dma uint64) {
	if !dev.stopped {
		dev.pdev.Info("%s at dma %#x not freed: the device did not report stopping", name, dma)
		return
	}
	dev.pdev.DMAFreeCoherent(n, cpu, dma)
}

// stop writes ctrl to CTRL (0 to disable, CtrlReset to reset) and reads STATUS
// back until it shows the device stopped: READY clear (and, after a reset, ERROR
// too). The write is posted; the read cannot pass it, so the read-back is what
// proves the device has it. It reports whether the device stopped within 100 µs.
func (dev *Device) stop(ctrl uint32) bool {
	dev.stopped = false
	dev.writeReg(sacc.RegCTRL, ctrl)
	c := dev.k.CPU
	deadline := c.Now() + 100_000
	for {
		st := dev.readReg(sacc.RegSTATUS)
		if st&sacc.StatusReady == 0 && (ctrl&sacc.CtrlReset == 0 || st&sacc.StatusError == 0) {
			dev.stopped = true
			return true
		}
		if c.Now() > deadline {
			dev.pdev.Info("device did not stop after CTRL %#x (STATUS %#x)", ctrl, st)
			return false
		}
		c.Delay(500)
	}
}

// revokeUserMappings takes the doorbell page away from every process that mapped
// it (unmap_mapping_range): a stale mapping faults instead of ringing a device
// that was reset or given back to the kernel. On remove (all) every page of BAR0
// a process mapped goes, whatever it is.
func (dev *Device) revokeUserMappings(all bool) {
	if dev.cdev == nil {
		return
	}
	off, n := uint64(sacc.DoorbellPage), uint64(sacc.PageSize)
	if all {
		off, n = 0, sacc.BAR0Size
	}
	if pages := dev.k.UnmapMappingRange(dev.cdev, off, n); pages > 0 {
		dev.pdev.Info("revoked %d user mapping(s) of BAR0", pages)
	}
}

// sqBytes and cqBytes are the sizes of the two rings.
func (dev *Device) sqBytes() uint64 { return uint64(dev.size) * sacc.DescriptorSize }
func (dev *Device) cqBytes() uint64 { return uint64(dev.size) * sacc.CompletionSize }

// start programs the rings and enables the device, waiting for READY (§7.5).
func (dev *Device) start() error {
	dev.starting = true
	defer func() { dev.starting = false }()
	dev.sqTail, dev.cqHead, dev.phase, dev.count = 0, 0, dev.expectedInitialPhase(), 0
	dev.k.TraceDriverCQ(dev.cqHead, dev.phase)
	dev.regs.Writeq(sacc.RegSQBaseLo, dev.sqDMA)
	dev.writeReg(sacc.RegSQSize, dev.size)
	dev.regs.Writeq(sacc.RegCQBaseLo, dev.cqDMA)
	dev.writeReg(sacc.RegCQSize, dev.size)
	dev.writeReg(sacc.RegCTRL, sacc.CtrlEnable)
	dev.stopped = false
	// READY comes one enable latency later, never at once: wait for it, with a
	// deadline, as a driver must.
	c := dev.k.CPU
	deadline := c.Now() + 100_000
	for {
		st := dev.readReg(sacc.RegSTATUS)
		if st&sacc.StatusError != 0 {
			return fmt.Errorf("enable refused: ERR_CODE %#x", dev.readReg(sacc.RegErrCode))
		}
		if st&sacc.StatusReady != 0 {
			return nil
		}
		if c.Now() > deadline {
			return fmt.Errorf("device not ready after 100 µs (STATUS %#x)", st)
		}
		c.Delay(500)
	}
}

// expectedInitialPhase is the phase the first lap of completions carries: 1,
// since the CQ starts zeroed (§7.2). Under expected-phase-zero it is 0, and every
// zeroed entry looks new.
func (dev *Device) expectedInitialPhase() uint8 {
	if dev.q.Has(quirk.ExpectedPhaseZero) {
		return 0
	}
	return 1
}

// readReg and writeReg are the register accessors; every access is 32 bits wide
// (§5). Under wrong-width they make the classic mistake of 16-bit accesses.
func (dev *Device) readReg(off uint32) uint32 {
	if dev.q.Has(quirk.WrongWidth) {
		return uint32(dev.regs.Readw(off))
	}
	return dev.regs.Readl(off)
}

func (dev *Device) writeReg(off uint32, v uint32) {
	if dev.q.Has(quirk.WrongWidth) {
		dev.regs.Writew(off, uint16(v))
		return
	}
	dev.regs.Writel(off, v)
}

// PCI is the kernel's view of the device.
func (dev *Device) PCI() *kernel.PCIDev { return dev.pdev }

// InFlight is the number of requests submitted and not completed.
func (dev *Device) InFlight() int { return dev.count }

// RingSize is the SQ and CQ size.
func (dev *Device) RingSize() uint32 { return dev.size }
