package kernel

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/quirk"
)

// PCIDev is a function found at boot (struct pci_dev).
type PCIDev struct {
	k                    *Kernel
	Bus, Dev, Fn         uint32
	Vendor, Device       uint16
	Class                uint32
	Revision             uint8
	BAR                  [sacc.NumBARs]Resource
	Driver               *PCIDriver
	DriverData           any
	msixCap              uint32
	vectors              []uint8 // CPU vectors of allocated MSI-X entries
	enabled, busMastered bool
	regions              [sacc.NumBARs]string // who claimed each BAR (pci_request_regions); "" when free
	iomaps               int                  // pci_iomap mappings not yet unmapped
	dmaMask              uint64               // the DMA addresses the device can reach
}

// Resource is an assigned BAR.
type Resource struct{ Start, Size uint64 }

// Name is the device's name as the kernel log prints it: 0000:00:03.0.
func (d *PCIDev) Name() string { return fmt.Sprintf("0000:%02x:%02x.%d", d.Bus, d.Dev, d.Fn) }

// Info logs a line prefixed with the driver and device name (dev_info).
func (d *PCIDev) Info(format string, a ...any) {
	name := "pci"
	if d.Driver != nil {
		name = d.Driver.Name
	}
	d.k.Printk("%s %s: %s", name, d.Name(), fmt.Sprintf(format, a...))
}

// Kernel is the kernel the device belongs to.
func (d *PCIDev) Kernel() *Kernel { return d.k }

func (d *PCIDev) cfgAddr(reg uint32) uint64 { return sacc.ECAMAddress(d.Bus, d.Dev, d.Fn, reg) }

// ReadConfig32 … WriteConfig16 are pci_read_config_* and pci_write_config_*.
func (d *PCIDev) ReadConfig32(reg uint32) uint32     { return d.k.CPU.Readl(d.cfgAddr(reg)) }
func (d *PCIDev) ReadConfig16(reg uint32) uint16     { return d.k.CPU.Readw(d.cfgAddr(reg)) }
func (d *PCIDev) ReadConfig8(reg uint32) uint8       { return d.k.CPU.Readb(d.cfgAddr(reg)) }
func (d *PCIDev) WriteConfig32(reg uint32, v uint32) { d.k.CPU.Writel(d.cfgAddr(reg), v) }
func (d *PCIDev) WriteConfig16(reg uint32, v uint16) { d.k.CPU.Writew(d.cfgAddr(reg), v) }

// enumerate is the firmware step: scan bus 0, size every BAR, assign addresses
// from the MMIO window, and record what it found. COMMAND stays 0: enabling decode
// is the driver's job (pci_enable_device).
func (k *Kernel) enumerate() error {
	c := k.CPU
	next := uint64(sacc.MMIOWindowBase)
	for dev := uint32(0); dev < 32; dev++ {
		id := c.Readl(sacc.ECAMAddress(0, dev, 0, sacc.CfgVendorID))
		if id&0xFFFF == sacc.AbsentVendorID {
			continue
		}
		// Every PCI device starts out able to reach 32 bits of DMA address, as
		// in Linux, until its driver says more (dma_set_mask_and_coherent).
		d := &PCIDev{k: k, Dev: dev, Vendor: uint16(id), Device: uint16(id >> 16), dmaMask: DMABitMask(32)}
		rc := c.Readl(d.cfgAddr(sacc.CfgRevision))
		d.Revision, d.Class = uint8(rc), rc>>8
		for i := range sacc.NumBARs {
			reg := uint32(sacc.CfgBAR0 + 4*i)
			old := c.Readl(d.cfgAddr(reg))
			c.Writel(d.cfgAddr(reg), 0xFFFF_FFFF)
			size := sacc.BARSizeFromMask(c.Readl(d.cfgAddr(reg)))
			if size == 0 {
				c.Writel(d.cfgAddr(reg), old)
				continue
			}
			base := (next + size - 1) &^ (size - 1) // naturally aligned
			if base+size-1 > sacc.MMIOWindowEnd {
				return fmt.Errorf("pci %s: no room for BAR%d (%#x bytes)", d.Name(), i, size)
			}
			if k.cfg.Quirks.Has(quirk.BARSizingNoMask) {
				// The bug: the size comes from the raw read-back and the BAR is
				// left holding the sizing pattern instead of its address.
				d.BAR[i] = Resource{base, uint64(^c.Readl(d.cfgAddr(reg))) + 1}
				next = base + size
				continue
			}
			c.Writel(d.cfgAddr(reg), uint32(base))
			d.BAR[i] = Resource{base, size}
			next = base + size
		}
		k.pci = append(k.pci, d)
		k.Printk("pci %s: [%04x:%04x] type 00 class 0x%06x", d.Name(), d.Vendor, d.Device, d.Class)
		for i, r := range d.BAR {
			if r.Size != 0 {
				k.Printk("pci %s: BAR %d: assigned [mem 0x%08x-0x%08x]", d.Name(), i, r.Start, r.Start+r.Size-1)
			}
		}
	}
	return nil
}

// Devices lists the functions found at boot.
func (k *Kernel) Devices() []*PCIDev { return k.pci }

// DeviceID is one entry of a driver's ID table (struct pci_device_id).
type DeviceID struct{ Vendor, Device uint16 }

// PCIDriver is struct pci_driver.
type PCIDriver struct {
	Name   string
	IDs    []DeviceID
	Probe  func(d *PCIDev) error
	Remove func(d *PCIDev)
}

// RegisterDriver is pci_register_driver: the driver is offered every unbound
// device whose vendor and device match its table.
func (k *Kernel) RegisterDriver(drv *PCIDriver) error {
	k.drv = append(k.drv, drv)
	for _, d := range k.pci {
		if d.Driver != nil || !matches(drv, d) {
			continue
		}
		d.Driver = drv
		if err := drv.Probe(d); err != nil {
			d.Info("probe failed: %v", err)
			d.Driver, d.DriverData = nil, nil
			return fmt.Errorf("%s: probe %s: %w", drv.Name, d.Name(), err)
		}
	}
	return nil
}

// UnregisterDriver removes the driver from every device it is bound to.
func (k *Kernel) UnregisterDriver(drv *PCIDriver) {
	for _, d := range k.pci {
		if d.Driver == drv {
			if drv.Remove != nil {
				drv.Remove(d)
			}
			d.Driver, d.DriverData = nil, nil
		}
	}
}

func matches(drv *PCIDriver, d *PCIDev) bool {
	for _, id := range drv.IDs {
		if id.Vendor == d.Vendor && id.Device == d.Device {
			return true
		}
	}
	return false
}

// EnableDevice is pci_enable_device: turn on memory decoding.
func (d *PCIDev) EnableDevice() error {
	if err := d.k.shouldFail("pci_enable_device"); err != nil {
		return err
	}
	cmd := d.ReadConfig16(sacc.CfgCommand)
	if d.k.cfg.Quirks.Has(quirk.SkipMemoryEnable) {
		cmd &^= sacc.CmdMemorySpace // the bug: decoding never turned on
	} else {
		cmd |= sacc.CmdMemorySpace
	}
	d.WriteConfig16(sacc.CfgCommand, cmd)
	d.enabled = true
	return nil
}

// DisableDevice is pci_disable_device.
func (d *PCIDev) DisableDevice() {
	d.WriteConfig16(sacc.CfgCommand, d.ReadConfig16(sacc.CfgCommand)&^(sacc.CmdMemorySpace|sacc.CmdBusMaster))
	d.enabled, d.busMastered = false, false
}

// SetMaster is pci_set_master: allow the device to issue DMA.
func (d *PCIDev) SetMaster() {
	if d.k.cfg.Quirks.Has(quirk.SkipBusMaster) {
		return // the bug: bus mastering never enabled
	}
	d.WriteConfig16(sacc.CfgCommand, d.ReadConfig16(sacc.CfgCommand)|sacc.CmdBusMaster)
	d.busMastered = true
}

// ClearMaster is pci_clear_master.
func (d *PCIDev) ClearMaster() {
	d.WriteConfig16(sacc.CfgCommand, d.ReadConfig16(sacc.CfgCommand)&^sacc.CmdBusMaster)
	d.busMastered = false
}

// IsEnabled is pci_is_enabled: EnableDevice succeeded and DisableDevice has not
// run since.
func (d *PCIDev) IsEnabled() bool { return d.enabled }

// IsBusMaster is pdev->is_busmaster: SetMaster turned bus mastering on and
// nothing has turned it off since.
func (d *PCIDev) IsBusMaster() bool { return d.busMastered }

// RequestRegions is pci_request_regions: claim every assigned BAR for name, so
// that no one else drives the device's registers. If any BAR is claimed already
// it fails with EBUSY and claims none.
func (d *PCIDev) RequestRegions(name string) error {
	if err := d.k.shouldFail("pci_request_regions"); err != nil {
		return err
	}
	for i, r := range d.BAR {
		if r.Size != 0 && d.regions[i] != "" {
			d.Info("BAR %d: can't reserve [mem 0x%08x-0x%08x]: in use by %s", i, r.Start, r.Start+r.Size-1, d.regions[i])
			return fmt.Errorf("BAR%d is claimed by %s: %w", i, d.regions[i], EBUSY)
		}
	}
	for i, r := range d.BAR {
		if r.Size != 0 {
			d.regions[i] = name
		}
	}
	return nil
}

// ReleaseRegions is pci_release_regions: give back what RequestRegions claimed.
func (d *PCIDev) ReleaseRegions() { d.regions = [sacc.NumBARs]string{} }

// RegionOwner is the name that claimed BAR i, "" when it is free (what
// /proc/iomem shows).
func (d *PCIDev) RegionOwner(i int) string { return d.regions[i] }

// FindCapability walks the capability list from 0x34 (pci_find_capability).
func (d *PCIDev) FindCapability(id uint8) uint32 {
	if d.ReadConfig16(sacc.CfgStatus)&sacc.StatusCapList == 0 {
		return 0
	}
	p := uint32(d.ReadConfig8(sacc.CfgCapPtr)) &^ 3
	for n := 0; p != 0 && n < 48; n++ {
		hdr := d.ReadConfig16(p)
		if uint8(hdr) == id {
			return p
		}
		p = uint32(hdr>>8) &^ 3
	}
	return 0
}

// IOMem is an ioremapped BAR (void __iomem *).
type IOMem struct {
	k        *Kernel
	pdev     *PCIDev // the device it was mapped for; nil for the kernel's own
	Base     uint64
	Size     uint64
	unmapped bool
}

// IOMap is pci_iomap: map BAR i for MMIO. It fails for an unassigned BAR. Each
// mapping is undone with IOUnmap.
func (d *PCIDev) IOMap(bar int) (*IOMem, error) {
	if err := d.k.shouldFail("pci_iomap"); err != nil {
		return nil, err
	}
	r := d.BAR[bar]
	if r.Size == 0 {
		return nil, fmt.Errorf("BAR%d is not assigned", bar)
	}
	d.iomaps++
	return &IOMem{k: d.k, pdev: d, Base: r.Start, Size: r.Size}, nil
}

// IOUnmap is pci_iounmap: the mapping goes away, and any access through it
// afterwards is a kernel bug that stops the kernel (see at). Unmapping twice, or
// a mapping of another device, is refused with a warning.
func (d *PCIDev) IOUnmap(io *IOMem) {
	if io == nil || io.pdev != d || io.unmapped {
		d.Info("WARNING: pci_iounmap of a mapping that is not live")
		return
	}
	io.unmapped = true
	d.iomaps--
}

// IOMaps counts the device's IOMap mappings that IOUnmap has not undone.
func (d *PCIDev) IOMaps() int { return d.iomaps }

// at is the address of the register at off. An access through a mapping that
// iounmap removed reaches no device on real hardware but a page fault in the
// kernel: here too the kernel stops, with the address.
func (io *IOMem) at(off uint32) uint64 {
	if io.unmapped {
		panic(fmt.Errorf("BUG: unable to handle page fault for address %#x: BAR at %#x was iounmapped", io.Base+uint64(off), io.Base))
	}
	return io.Base + uint64(off)
}

// Readl is ioread32 at an offset into the BAR.
func (io *IOMem) Readl(off uint32) uint32 { return io.k.CPU.Readl(io.at(off)) }

// Readw is ioread16.
func (io *IOMem) Readw(off uint32) uint16 { return io.k.CPU.Readw(io.at(off)) }

// Writel is iowrite32: ordered after every earlier store to memory.
func (io *IOMem) Writel(off uint32, v uint32) { io.k.CPU.Writel(io.at(off), v) }

// Writew is iowrite16.
func (io *IOMem) Writew(off uint32, v uint16) { io.k.CPU.Writew(io.at(off), v) }

// WritelRelaxed is writel_relaxed: not ordered against earlier stores to memory.
func (io *IOMem) WritelRelaxed(off uint32, v uint32) {
	io.k.CPU.WritelRelaxed(io.at(off), v)
}

// Writeq writes a 64-bit register (lo_hi_writeq would also do on SACC).
func (io *IOMem) Writeq(off uint32, v uint64) { io.k.CPU.Writeq(io.at(off), v) }
