package finddevice

import (
	"errors"
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// budget is how much virtual time a scan may take: 32 slots at about 1 µs per
// configuration read need a few tens of microseconds.
const budget sim.Time = 1_000_000

var theSACC = Function{Bus: 0, Dev: sacc.SACCDevice, Fn: 0, Vendor: sacc.VendorID, Device: sacc.DeviceID,
	Class: sacc.ClassCode, Revision: sacc.Revision}

func describe(f Function) string {
	return fmt.Sprintf("%02x:%02x.%x  vendor %#04x  device %#04x  class %#06x  revision %#02x",
		f.Bus, f.Dev, f.Fn, f.Vendor, f.Device, f.Class, f.Revision)
}

func find(m *check.Machine, bus ConfigReader) (Function, error) {
	var f Function
	var err error
	m.Do("FindSACC", budget, func() { f, err = FindSACC(bus) })
	return f, err
}

func TestFindsTheSACC(t *testing.T) {
	m := check.Boot(t, host.Config{})
	mark := m.Mark()
	got, err := find(m, m.CPU)
	if err != nil {
		m.Fatalf("FindSACC returned an error: %v\nwant: %s", err, describe(theSACC))
	}
	if got != theSACC {
		m.Fatalf("FindSACC returned\n  %s\nwant\n  %s\n(class code and revision come from the dword at offset 0x08, §2)", describe(got), describe(theSACC))
	}
	scan := m.Since(mark)
	if w := check.Find(scan, trace.ConfigWrite); len(w) > 0 {
		m.Errorf("the scan wrote configuration space; a scan only reads. The device saw:\n%s", check.Lines(w))
	}
	looked := false
	for _, ev := range check.Find(scan, trace.ConfigRead) {
		if ev.Args[0] == uint64(sacc.SourceID(0, sacc.SACCDevice, 0)) && ev.Args[1] == sacc.CfgVendorID {
			looked = true
		}
	}
	if !looked {
		m.Errorf("FindSACC gave the right answer, but the device never saw a read of its vendor and device IDs " +
			"(00:03.0, offset 0x00): the answer did not come from the bus.")
	}
}

func TestFindsTheSACCInAnotherSlot(t *testing.T) {
	// Slot 31 is the last one a scan of bus 0 looks at.
	for _, slot := range []uint32{17, 31} {
		t.Run(fmt.Sprintf("slot %d", slot), func(t *testing.T) {
			m := check.Boot(t, host.Config{})
			bus := &rewiredBus{cpu: m.CPU, moved: map[uint32]uint32{slot: sacc.SACCDevice}, empty: map[uint32]bool{sacc.SACCDevice: true}}
			got, err := find(m, bus)
			want := theSACC
			want.Dev = slot
			where := fmt.Sprintf("On this machine the SACC sits in slot %d (00:%02x.0) and slot 3 is empty.", slot, slot)
			if err != nil {
				m.Fatalf("%s\nFindSACC returned an error: %v\nwant: %s\nslots the scan read: %s", where, err, describe(want), bus.slotsRead())
			}
			if got != want {
				m.Fatalf("%s\nFindSACC returned\n  %s\nwant\n  %s\nslots the scan read: %s", where, describe(got), describe(want), bus.slotsRead())
			}
		})
	}
}

func TestSkipsOtherDevices(t *testing.T) {
	m := check.Boot(t, host.Config{})
	bus := &rewiredBus{cpu: m.CPU, fake: map[uint32]fakeFunction{
		0: {id: 0x29C0_8086, revClass: 0x060000_02}, // an Intel host bridge, as on QEMU's q35
		1: {id: 0x0010_1B36, revClass: 0x010802_02}, // QEMU's NVMe controller: SACC's vendor ID, another device ID
	}}
	got, err := find(m, bus)
	if err != nil {
		m.Fatalf("On this machine 00:00.0 is a host bridge, 00:01.0 an NVMe controller and 00:03.0 the SACC.\n"+
			"FindSACC returned an error: %v\nwant: %s", err, describe(theSACC))
	}
	switch {
	case got.Dev == 0:
		m.Fatalf("FindSACC picked 00:00.0, a host bridge (vendor 0x8086, device 0x29c0): the first slot that answers is not necessarily yours.\nwant: %s", describe(theSACC))
	case got.Dev == 1:
		m.Fatalf("FindSACC picked 00:01.0 (vendor 0x1b36, device 0x0010): the same vendor ID as the SACC, but a different device ID. "+
			"It is QEMU's NVMe controller.\nwant: %s", describe(theSACC))
	case got != theSACC:
		m.Fatalf("On this machine 00:00.0 is a host bridge, 00:01.0 an NVMe controller and 00:03.0 the SACC.\n"+
			"FindSACC returned\n  %s\nwant\n  %s", describe(got), describe(theSACC))
	}
}

func TestReportsAnEmptyBus(t *testing.T) {
	m := check.Boot(t, host.Config{})
	bus := &rewiredBus{cpu: m.CPU, empty: map[uint32]bool{}}
	for d := range uint32(32) {
		bus.empty[d] = true
	}
	got, err := find(m, bus)
	if err == nil {
		m.Fatalf("On this machine every slot of bus 0 is empty: each reads all ones.\n"+
			"FindSACC returned %s and no error; want an error wrapping ErrNotFound.", describe(got))
	}
	if !errors.Is(err, ErrNotFound) {
		m.Fatalf("On this machine every slot of bus 0 is empty. FindSACC returned the error %q; "+
			"want an error that wraps ErrNotFound (return it, or fmt.Errorf(\"…: %%w\", ErrNotFound)), "+
			"so that callers can test for it with errors.Is.", err)
	}
}

// rewiredBus is the machine's configuration space with some slots changed: a slot
// can be empty, can answer with another slot's configuration space, or can hold a
// made-up function. Everything else goes to the real machine through the CPU.
type rewiredBus struct {
	cpu   ConfigReader
	moved map[uint32]uint32 // slot the scan reads → real slot that answers
	empty map[uint32]bool
	fake  map[uint32]fakeFunction
	read  []uint32 // slots read, in order, without repeats
}

type fakeFunction struct{ id, revClass uint32 }

func (b *rewiredBus) Readl(addr uint64) uint32 {
	if addr < sacc.ECAMBase || addr >= sacc.ECAMBase+1<<20 {
		return b.cpu.Readl(addr) // not bus 0's configuration space
	}
	off := addr - sacc.ECAMBase
	dev, fn, reg := uint32(off>>15&31), uint32(off>>12&7), uint32(off&0xFFF)
	if len(b.read) == 0 || b.read[len(b.read)-1] != dev {
		b.read = append(b.read, dev)
	}
	if fn != 0 {
		return b.cpu.Readl(addr)
	}
	if f, ok := b.fake[dev]; ok {
		switch reg {
		case sacc.CfgVendorID:
			return f.id
		case sacc.CfgRevision:
			return f.revClass
		}
		return 0
	}
	if real, ok := b.moved[dev]; ok {
		return b.cpu.Readl(sacc.ECAMAddress(0, real, fn, reg))
	}
	if b.empty[dev] {
		return 0xFFFF_FFFF
	}
	return b.cpu.Readl(addr)
}

func (b *rewiredBus) slotsRead() string {
	if len(b.read) == 0 {
		return "none"
	}
	s := ""
	for i, d := range b.read {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprint(d)
	}
	return s
}
