package readidentity

import (
	"errors"
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// budget is how much virtual time ReadIdentity may take: two MMIO reads of
// about a microsecond each.
const budget sim.Time = 1_000_000

var want = Identity{Magic: sacc.MagicValue, Version: sacc.VersionValue}

func boot(t *testing.T, cfg host.Config) (*check.Machine, *kernel.PCIDev) {
	m := check.Boot(t, cfg)
	devs := m.K.Devices()
	if len(devs) != 1 {
		t.Fatalf("check: the kernel found %d PCI functions, want 1", len(devs))
	}
	return m, devs[0]
}

func read(m *check.Machine, pdev *kernel.PCIDev) (Identity, error) {
	var id Identity
	var err error
	m.Do("ReadIdentity", budget, func() { id, err = ReadIdentity(pdev) })
	return id, err
}

func (id Identity) String() string {
	return fmt.Sprintf("MAGIC %#08x, VERSION %#08x", id.Magic, id.Version)
}

// refused lists the accesses the device or the platform turned away as the
// wrong width.
func refused(evs []trace.Event) []trace.Event {
	var out []trace.Event
	for _, ev := range check.Find(evs, trace.GuestError) {
		if ev.Args[2] == trace.ErrWidth {
			out = append(out, ev)
		}
	}
	return out
}

func TestReadsMagicAndVersion(t *testing.T) {
	m, pdev := boot(t, host.Config{})
	pdev.EnableDevice()
	mark := m.Mark()
	got, err := read(m, pdev)
	evs := m.Since(mark)
	width := ""
	if r := refused(evs); len(r) > 0 {
		width = fmt.Sprintf("\nThe device refused %d accesses as the wrong width; every register access must be 32 bits (§5), "+
			"and a refused read returns all ones:\n%s", len(r), check.Lines(r))
	}
	if err != nil {
		m.Fatalf("Memory decoding is on and BAR0 is at %#x, yet ReadIdentity returned an error: %v\nwant %v%s",
			pdev.BAR[0].Start, err, want, width)
	}
	if got != want {
		m.Fatalf("ReadIdentity returned %v\nwant %v%s", got, want, width)
	}
	if width != "" {
		m.Fatalf("ReadIdentity returned the right values, but not by reading them cleanly.%s", width)
	}
	for _, reg := range []uint32{sacc.RegMAGIC, sacc.RegVERSION} {
		seen := false
		for _, ev := range check.Find(evs, trace.RegRead) {
			seen = seen || ev.Args[0] == uint64(reg) && ev.Args[1] == 4
		}
		if !seen {
			m.Errorf("ReadIdentity returned the right values, but the device never saw a 32-bit read of %s (offset %#x): "+
				"the values did not come from the device.", sacc.RegName(reg), reg)
		}
	}
	if w := check.Find(evs, trace.RegWrite, trace.ConfigWrite); len(w) > 0 {
		m.Errorf("ReadIdentity wrote to the device; it should only read. The device saw:\n%s", check.Lines(w))
	}
}

func TestFailsCleanlyWhenDecodingIsOff(t *testing.T) {
	m, pdev := boot(t, host.Config{})
	// No pdev.EnableDevice(): COMMAND is 0, BAR0 does not decode.
	got, err := read(m, pdev)
	if cmd := m.M.Device().Config().Command(); cmd&sacc.CmdMemorySpace != 0 {
		m.Fatalf("ReadIdentity turned memory decoding on (COMMAND now %#04x). Leave that to the caller: "+
			"a driver enables the device once, in probe (pci_enable_device), and a helper that only reads must not change it.", cmd)
	}
	if err == nil {
		m.Fatalf("Memory decoding is off (COMMAND bit 1 is 0), so every read of BAR0 returns all ones, "+
			"yet ReadIdentity returned %v and no error.\nwant an error wrapping ErrNotDecoding.", got)
	}
	if !errors.Is(err, ErrNotDecoding) {
		m.Fatalf("Memory decoding is off (COMMAND bit 1 is 0), so MAGIC reads all ones. ReadIdentity returned the error %q;\n"+
			"want an error that wraps ErrNotDecoding (return it, or fmt.Errorf(\"…: %%w\", ErrNotDecoding)), so the caller can tell this case apart.", err)
	}
}

func TestFailsCleanlyWhenBAR0IsLost(t *testing.T) {
	// The firmware sizes BAR0 and never restores it (the bug 01-size-bar is about).
	q := quirk.Set(0).With(quirk.BARSizingNoMask)
	m, pdev := boot(t, host.Config{Machine: machine.Config{Quirks: q}})
	pdev.EnableDevice()
	bar0 := m.M.Device().Config().Get32(sacc.CfgBAR0)
	got, err := read(m, pdev)
	if err == nil {
		m.Fatalf("This time the firmware sized BAR0 and never restored it: BAR0 holds %#08x, outside the MMIO window, "+
			"while the kernel believes it is at %#x. Every read there returns all ones, yet ReadIdentity returned %v and no error.\n"+
			"want an error wrapping ErrNotDecoding.", bar0, pdev.BAR[0].Start, got)
	}
	if !errors.Is(err, ErrNotDecoding) {
		m.Fatalf("BAR0 is lost (it holds %#08x), so MAGIC reads all ones. ReadIdentity returned the error %q;\n"+
			"want an error that wraps ErrNotDecoding.", bar0, err)
	}
}

// impostor boots a machine on which the kernel's BAR0 starts 0x10 bytes into
// the SACC's real BAR0, at SQ_BASE: offset 0 of it reads the low half of SQ_BASE
// and offset 4 the high half, which the test sets to magic and version. It
// stands in for a function that decodes but is not a SACC, or not one of this
// version.
func impostor(t *testing.T, magic, version uint32) (*check.Machine, *kernel.PCIDev) {
	m, pdev := boot(t, host.Config{})
	pdev.EnableDevice()
	regs, err := pdev.IOMap(0)
	if err != nil {
		t.Fatalf("check: pci_iomap: %v", err)
	}
	regs.Writeq(sacc.RegSQBaseLo, uint64(version)<<32|uint64(magic))
	pdev.BAR[0].Start += sacc.RegSQBaseLo
	return m, pdev
}

func TestRefusesAnotherDevice(t *testing.T) {
	const other = 0x1234_5678
	m, pdev := impostor(t, other, sacc.VersionValue)
	got, err := read(m, pdev)
	switch {
	case err == nil:
		m.Fatalf("On this machine BAR0 decodes, but the device there is not a SACC: MAGIC reads %#08x, not %#08x.\n"+
			"ReadIdentity returned %v and no error; want an error: a driver must not go on with a device it does not know.",
			other, sacc.MagicValue, got)
	case errors.Is(err, ErrNotDecoding):
		m.Fatalf("On this machine BAR0 decodes, but MAGIC reads %#08x: the device there is not a SACC.\n"+
			"ReadIdentity returned %q, which wraps ErrNotDecoding. All ones is the only sign of a BAR that does not decode; "+
			"any other value comes from a device that answered. Return an error that does not wrap ErrNotDecoding.", other, err)
	}
}

func TestRefusesAnotherVersion(t *testing.T) {
	m, pdev := impostor(t, sacc.MagicValue, 2)
	got, err := read(m, pdev)
	if err == nil {
		m.Fatalf("On this machine MAGIC reads %#08x, but VERSION reads 2, not %d: a version of the device this driver "+
			"does not know. ReadIdentity returned %v and no error; want an error.", sacc.MagicValue, sacc.VersionValue, got)
	}
	if errors.Is(err, ErrNotDecoding) {
		m.Fatalf("MAGIC reads %#08x and VERSION 2: BAR0 decodes. ReadIdentity returned %q, which wraps ErrNotDecoding; "+
			"that error is for MAGIC reading all ones only.", sacc.MagicValue, err)
	}
}
