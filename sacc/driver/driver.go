// Package driver is the SACC driver, written the way a Linux PCI driver is: probe
// brings the device up in the order §7.5 of the specification asks, submission is
// a descriptor, a write barrier and a doorbell, completions are found by phase and
// returned with CQ_HEAD, interrupts are acknowledged before the queue is drained,
// errors reset the device, and remove undoes probe step by step. It reaches the
// device only through the kernel's services and the CPU's operations.
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

// probe brings the device up, in the order the hardware needs.
func (d *Driver) probe(pdev *kernel.PCIDev) error {
	dev := &Device{drv: d, pdev: pdev, k: d.k, q: d.k.Config().Quirks, size: d.cfg.RingSize}
	if err := pdev.EnableDevice(); err != nil {
		return err
	}
	pdev.SetMaster()
	regs, err := pdev.IOMap(0)
	if err != nil {
		pdev.DisableDevice()
		return err
	}
	dev.regs = regs
	// §7.5: verify MAGIC and VERSION before anything else.
	if magic := dev.readReg(sacc.RegMAGIC); magic != sacc.MagicValue {
		pdev.DisableDevice()
		return fmt.Errorf("bad MAGIC %#x (want %#x): is memory decoding on and BAR0 assigned?", magic, sacc.MagicValue)
	}
	if v := dev.readReg(sacc.RegVERSION); v != sacc.VersionValue {
		pdev.DisableDevice()
		return fmt.Errorf("unsupported VERSION %#x", v)
	}
	// Coherent memory for both rings, zeroed (§7.5).
	if dev.sqCPU, dev.sqDMA, err = pdev.DMAAllocCoherent(uint64(dev.size) * sacc.DescriptorSize); err != nil {
		pdev.DisableDevice()
		return err
	}
	if dev.cqCPU, dev.cqDMA, err = pdev.DMAAllocCoherent(uint64(dev.size) * sacc.CompletionSize); err != nil {
		pdev.DMAFreeCoherent(uint64(dev.size)*sacc.DescriptorSize, dev.sqCPU, dev.sqDMA)
		pdev.DisableDevice()
		return err
	}
	dev.inflight = make([]*Request, dev.size)
	// MSI-X: vector 0 for completions, vector 1 for device errors (§9).
	if _, err := pdev.AllocIRQVectors(sacc.MSIXVectors, sacc.MSIXVectors); err != nil {
		dev.freeRings()
		pdev.DisableDevice()
		return err
	}
	if err := pdev.RequestIRQ(sacc.MSIXVectorComplete, dev.completionIRQ, "sacc-cq", dev); err != nil {
		return err
	}
	if err := pdev.RequestIRQ(sacc.MSIXVectorError, dev.errorIRQ, "sacc-err", dev); err != nil {
		return err
	}
	if err := dev.start(); err != nil {
		dev.teardown()
		return err
	}
	d.Dev = dev
	pdev.DriverData = dev
	d.k.RegisterChrdev(DevPath, &chrdev{dev: dev})
	pdev.Info("SACC v%d ready: %d-entry rings, SQ at dma %#x, CQ at dma %#x, %s",
		sacc.VersionValue, dev.size, dev.sqDMA, dev.cqDMA, map[bool]string{true: "interrupts", false: "polling"}[d.cfg.Interrupts])
	return nil
}

// start programs the rings and enables the device, waiting for READY (§7.5).
func (dev *Device) start() error {
	dev.sqTail, dev.cqHead, dev.phase, dev.count = 0, 0, 1, 0
	if dev.q.Has(quirk.ExpectedPhaseZero) {
		dev.phase = 0 // the bug: every zeroed CQ entry looks new
	}
	dev.regs.Writeq(sacc.RegSQBaseLo, dev.sqDMA)
	dev.writeReg(sacc.RegSQSize, dev.size)
	dev.regs.Writeq(sacc.RegCQBaseLo, dev.cqDMA)
	dev.writeReg(sacc.RegCQSize, dev.size)
	dev.writeReg(sacc.RegCTRL, sacc.CtrlEnable)
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

// readReg and writeReg are the register accessors; every access is 32 bits wide
// (§5), unless a quirk makes the classic width mistake.
func (dev *Device) readReg(off uint32) uint32 {
	if dev.q.Has(quirk.WrongWidth) {
		return uint32(dev.k.CPU.Readw(dev.regs.Base + uint64(off)))
	}
	return dev.regs.Readl(off)
}

func (dev *Device) writeReg(off uint32, v uint32) {
	if dev.q.Has(quirk.WrongWidth) {
		dev.k.CPU.Writew(dev.regs.Base+uint64(off), uint16(v))
		return
	}
	dev.regs.Writel(off, v)
}

// remove undoes probe in reverse.
func (d *Driver) remove(pdev *kernel.PCIDev) {
	dev, _ := pdev.DriverData.(*Device)
	if dev == nil {
		return
	}
	d.k.UnregisterChrdev(DevPath)
	dev.failAll(ErrNoDevice)
	dev.teardown()
	pdev.Info("removed")
	d.Dev = nil
}

func (dev *Device) teardown() {
	dev.writeReg(sacc.RegCTRL, 0) // stop the device before its memory goes away
	dev.pdev.FreeIRQ(sacc.MSIXVectorError)
	dev.pdev.FreeIRQ(sacc.MSIXVectorComplete)
	dev.pdev.FreeIRQVectors()
	dev.freeRings()
	dev.pdev.ClearMaster()
	dev.pdev.DisableDevice()
}

func (dev *Device) freeRings() {
	dev.pdev.DMAFreeCoherent(uint64(dev.size)*sacc.CompletionSize, dev.cqCPU, dev.cqDMA)
	dev.pdev.DMAFreeCoherent(uint64(dev.size)*sacc.DescriptorSize, dev.sqCPU, dev.sqDMA)
}

// PCI is the kernel's view of the device.
func (dev *Device) PCI() *kernel.PCIDev { return dev.pdev }

// InFlight is the number of requests submitted and not completed.
func (dev *Device) InFlight() int { return dev.count }

// RingSize is the SQ and CQ size.
func (dev *Device) RingSize() uint32 { return dev.size }
