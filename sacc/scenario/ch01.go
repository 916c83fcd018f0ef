package scenario

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Chapter 1, "Finding the device": the firmware scans bus 0 and gives the BARs
// addresses; then the first things a driver's probe does, each one read back from
// configuration space: who the device is, how big its BARs are, pci_enable_device,
// pci_set_master, and a walk of the capability list.

var _ = register(Scenario{
	Chapter: 1, Primary: true, Name: "find-device",
	Summary: "configuration space: the bus scan, BAR sizing, memory decoding and bus mastering turned on, the capability list",
	Quirks:  []quirk.Quirk{quirk.SkipMemoryEnable, quirk.BARSizingNoMask},
	Run:     FindDevice,
})

// FindDevice boots the kernel without the SACC driver (the firmware step
// enumerates the bus) and then does by hand what a probe function does first.
func FindDevice(m *machine.Machine, env *Env) error {
	log := env.Log
	// Count what the firmware's scan saw: one vendor-ID read per device number.
	var absent, present int
	detach := m.Tracer().Attach(trace.Func(func(ev trace.Event) {
		if ev.Kind == trace.ConfigRead && ev.Args[1] == sacc.CfgVendorID {
			if ev.Args[3]&0xFFFF == sacc.AbsentVendorID {
				absent++
			} else {
				present++
			}
		}
	}))
	h, err := host.BootOn(m, host.Config{Machine: m.Config(), NoDriver: true})
	detach()
	env.Host = h
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "firmware scanned bus 0: %d device numbers read vendor 0xffff (nobody there), %d answered\n", absent, present)
	if len(h.K.Devices()) == 0 {
		return fmt.Errorf("no device on bus 0")
	}
	d := h.K.Devices()[0]

	// Who is it? Every one of these reads is a configuration access.
	start := m.Now()
	id := d.ReadConfig32(sacc.CfgVendorID)
	rc := d.ReadConfig32(sacc.CfgRevision)
	sub := d.ReadConfig32(sacc.CfgSubsystemVID)
	hdr := d.ReadConfig8(sacc.CfgHeaderType)
	fmt.Fprintf(log, "%s: vendor 0x%04x device 0x%04x, class 0x%06x (base class 0x%02x: processing accelerator), revision 0x%02x\n",
		d.Name()[5:], id&0xFFFF, id>>16, rc>>8, rc>>24, rc&0xFF)
	fmt.Fprintf(log, "subsystem %04x:%04x, header type 0x%02x (an endpoint); 4 configuration reads took %d ns\n",
		sub&0xFFFF, sub>>16, hdr, m.Now()-start)

	// BAR sizing, as the firmware did it: save, write all ones, read back, restore.
	for i := range 3 {
		reg := uint32(sacc.CfgBAR0 + 4*i)
		saved := d.ReadConfig32(reg)
		d.WriteConfig32(reg, 0xFFFF_FFFF)
		back := d.ReadConfig32(reg)
		d.WriteConfig32(reg, saved)
		size := sacc.BARSizeFromMask(back)
		if size == 0 {
			fmt.Fprintf(log, "BAR%d reads back 0x%08x after the sizing write: not implemented\n", i, back)
			continue
		}
		fmt.Fprintf(log, "BAR%d reads back 0x%08x after the sizing write: %s, %s; restored to %#x\n",
			i, back, ch01KiB(size), ch01BARType(back), saved)
		if r := d.BAR[i]; saved != uint32(r.Start) {
			fmt.Fprintf(log, "BAR%d holds %#x, but the kernel recorded %#x: the firmware did not put the address back\n", i, saved, r.Start)
		}
	}

	// Decoding is off at power-on: BAR0 does not answer yet.
	bar0 := d.BAR[0].Start
	cpu := h.CPU
	fmt.Fprintf(log, "COMMAND 0x%04x: MAGIC at %#x reads %#x before pci_enable_device\n",
		d.ReadConfig16(sacc.CfgCommand), bar0+sacc.RegMAGIC, cpu.Readl(bar0+sacc.RegMAGIC))

	if err := d.EnableDevice(); err != nil {
		return err
	}
	cmd := d.ReadConfig16(sacc.CfgCommand)
	magic := cpu.Readl(bar0 + sacc.RegMAGIC)
	fmt.Fprintf(log, "pci_enable_device: COMMAND 0x%04x (memory space %s); MAGIC reads %#x\n", cmd, ch01OnOff(cmd&sacc.CmdMemorySpace != 0), magic)
	d.SetMaster()
	cmd = d.ReadConfig16(sacc.CfgCommand)
	fmt.Fprintf(log, "pci_set_master: COMMAND 0x%04x (bus master %s)\n", cmd, ch01OnOff(cmd&sacc.CmdBusMaster != 0))

	ch01WalkCapabilities(d, env)

	switch {
	case magic != sacc.MagicValue:
		return fmt.Errorf("MAGIC reads %#x, want %#x: BAR0 does not decode (COMMAND %#x, BAR0 %#x)",
			magic, sacc.MagicValue, cmd, d.ReadConfig32(sacc.CfgBAR0))
	case cmd&sacc.CmdBusMaster == 0:
		fmt.Fprintf(log, "bus mastering is off: the device may not touch host memory (chapter 4)\n")
	}
	return nil
}

// ch01WalkCapabilities follows the list from the pointer at 0x34, as lspci and
// pci_find_capability do, and decodes the two capabilities SACC has.
func ch01WalkCapabilities(d *kernel.PCIDev, env *Env) {
	st := d.ReadConfig16(sacc.CfgStatus)
	if st&sacc.StatusCapList == 0 {
		fmt.Fprintf(env.Log, "STATUS 0x%04x: no capability list\n", st)
		return
	}
	p := uint32(d.ReadConfig8(sacc.CfgCapPtr))
	fmt.Fprintf(env.Log, "STATUS 0x%04x: bit 4 says a capability list exists; the pointer at 0x34 is 0x%02x\n", st, p)
	for n := 0; p != 0 && n < 48; n++ {
		hdr := d.ReadConfig16(p)
		id, next := uint8(hdr), uint32(hdr>>8)
		switch id {
		case sacc.CapIDPCIe:
			ls := d.ReadConfig16(p + sacc.CapPCIeLinkStaOff)
			fmt.Fprintf(env.Log, "capability at 0x%02x: ID 0x%02x PCI Express, link %s x%d; next 0x%02x\n",
				p, id, ch01LinkSpeed(ls&0xF), ls>>4&0x3F, next)
		case sacc.CapIDMSIX:
			ctl := d.ReadConfig16(p + sacc.CapMSIXControlOff)
			tbl := d.ReadConfig32(p + sacc.CapMSIXTableOff)
			pba := d.ReadConfig32(p + sacc.CapMSIXPBAOff)
			fmt.Fprintf(env.Log, "capability at 0x%02x: ID 0x%02x MSI-X, %d vectors, table in BAR%d at %#x, PBA in BAR%d at %#x; next 0x%02x\n",
				p, id, ctl&0x7FF+1, tbl&7, tbl&^7, pba&7, pba&^7, next)
		default:
			fmt.Fprintf(env.Log, "capability at 0x%02x: ID 0x%02x; next 0x%02x\n", p, id, next)
		}
		p = next &^ 3
	}
}

func ch01KiB(n uint64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

func ch01BARType(v uint32) string {
	if v&sacc.BARIOSpace != 0 {
		return "I/O space"
	}
	s := "32-bit memory"
	if v&sacc.BARType64 != 0 {
		s = "64-bit memory"
	}
	if v&sacc.BARPrefetchable != 0 {
		return s + ", prefetchable"
	}
	return s + ", not prefetchable"
}

func ch01OnOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func ch01LinkSpeed(code uint16) string {
	switch code {
	case 1:
		return "2.5 GT/s"
	case 2:
		return "5 GT/s"
	case 3:
		return "8 GT/s"
	case 4:
		return "16 GT/s"
	}
	return fmt.Sprintf("speed code %d", code)
}
